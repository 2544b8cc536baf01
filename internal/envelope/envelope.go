// Package envelope is the stored form of values shardq may compress or
// encrypt: task payloads, results, progress messages, step values and,
// when asked, errors.
//
// A plain value is stored as it is. A wrapped value opens with the byte
// 0xC1, which starts no msgpack value, no JSON and no UTF-8 text, then a
// flags byte:
//
//	0xC1 flags body                      not encrypted
//	0xC1 flags n keyID nonce ciphertext  encrypted (flags&Encrypted)
//
// The low two bits of flags name the compression of the body (or of the
// plaintext inside the ciphertext): none, s2 or zstd. An encrypted value
// names its key by ID (n bytes, 1 to 255), then holds a 12-byte nonce and
// the AES-256-GCM sealing of the body, whose additional data binds it to
// its task and its use, so a ciphertext moved to another task or field
// does not open.
//
// A plain value that happens to open with 0xC1 (only raw binary can) is
// wrapped with flags 0, so every stored value reads back exactly.
package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Magic opens every wrapped value.
const Magic byte = 0xC1

// Flags of a wrapped value.
const (
	codecMask byte = 0x03
	codecS2   byte = 0x01
	codecZstd byte = 0x02
	encrypted byte = 0x04
	known          = codecMask | encrypted
)

// NonceSize is the bytes of an encrypted value's nonce.
const NonceSize = 12

// Use says what a value is, for the additional data of its encryption: a
// payload does not open as a result of the same task.
type Use byte

// The uses of wrapped values.
const (
	Payload Use = iota + 1
	Result
	Progress
	Step
	Error
)

// String names the use, as errors say it.
func (u Use) String() string {
	switch u {
	case Payload:
		return "payload"
	case Result:
		return "result"
	case Progress:
		return "progress message"
	case Step:
		return "step value"
	case Error:
		return "error"
	}
	return fmt.Sprintf("Use(%d)", byte(u))
}

// DefaultLimit bounds what Open decompresses when its caller names no
// limit: queue.Config.MaxPayloadSize's default. No value decompresses
// without a bound.
const DefaultLimit = 1 << 20

// Errors of Open.
var (
	// ErrUnknownKey reports a value encrypted with a key the ring lacks,
	// or read without a ring.
	ErrUnknownKey = errors.New("encrypted with a key that is not in the key ring")
	// ErrCorrupt reports a wrapped value that does not open: cut short,
	// tampered with, or of unknown flags.
	ErrCorrupt = errors.New("corrupt envelope")
	// ErrTooLarge reports a value that would decompress past the limit.
	ErrTooLarge = errors.New("decompresses past the size limit")
	// ErrPlaintext reports a value that is not encrypted, read by a Codec
	// with a key ring that does not AllowPlain: a value written before
	// encryption was turned on, or one whose envelope was changed in Redis
	// to pass its ciphertext off as plain.
	ErrPlaintext = errors.New("not encrypted, though a key ring is configured")
)

// Wrapped reports whether b is a wrapped value.
func Wrapped(b []byte) bool { return len(b) > 0 && b[0] == Magic }

// WrappedString is Wrapped for a string.
func WrappedString(s string) bool { return len(s) > 0 && s[0] == Magic }

// KeyID returns the ID of the key b is encrypted with, or "" when b is
// not encrypted (or not a well-formed envelope).
func KeyID(b []byte) string {
	if len(b) < 3 || b[0] != Magic || b[1]&encrypted == 0 {
		return ""
	}
	n := int(b[2])
	if n == 0 || len(b) < 3+n {
		return ""
	}
	return string(b[3 : 3+n])
}

// Codec wraps and opens values by its settings. Its zero value stores
// every value plain and opens wrapped values that are not encrypted.
type Codec struct {
	Compression Compression
	// Above is the least size, in bytes, a value is compressed at.
	Above int
	Ring  *KeyRing
	// AllowPlain makes a Codec with a Ring open values that are not
	// encrypted, as one without a Ring does. Without it such a value is
	// ErrPlaintext: else anyone who can write to Redis could clear an
	// envelope's encrypted flag and have its ciphertext read as the value,
	// or put a plain value in place of a sealed one. Errors (use Error)
	// are exempt: scripts and workers without EncryptErrors write them
	// plain.
	AllowPlain bool
	// Dicts finds the dictionaries values were compressed against
	// (WrapDict); nil when none are to be read.
	Dicts *Dicts
	// Rand is where encrypted values' nonces come from; nil is
	// crypto/rand. Only the protocol's golden vectors set it, to fix the
	// nonce (docs/protocol.md).
	Rand io.Reader
}

// Wrap returns the stored form of b, a value of the task id for use u,
// appended to dst: compressed when b has at least c.Above bytes and
// compression makes it smaller, encrypted when c has a key ring. With
// neither, b itself (no copy), unless it opens with Magic.
func (c *Codec) Wrap(dst, b []byte, id string, u Use) ([]byte, error) {
	compressing := c.Compression != None && len(b) >= c.Above && len(b) > 0
	if c.Ring == nil {
		given := dst != nil
		if compressing {
			// the header and the compressed body in one buffer: a producer
			// wraps every task, so this path allocates once
			start := len(dst)
			out, flags := compressTo(c.Compression, append(dst, Magic, 0), b)
			if len(out)-start-2 < len(b) {
				out[start+1] = flags
				return out, nil
			}
			dst = out[:start]
		}
		if !Wrapped(b) {
			if !given {
				return b, nil
			}
			return append(dst, b...), nil
		}
		return append(append(dst, Magic, 0), b...), nil
	}
	var flags byte
	body := b
	if compressing {
		if z, f := compressTo(c.Compression, nil, b); len(z) < len(b) {
			body, flags = z, f
		}
	}
	key, kid := c.Ring.current()
	dst = slices.Grow(dst, 3+len(kid)+NonceSize+len(body)+key.Overhead())
	dst = append(dst, Magic, flags|encrypted, byte(len(kid)))
	dst = append(dst, kid...)
	n := len(dst)
	dst = dst[:n+NonceSize] // grown above
	if _, err := c.nonce(dst[n:]); err != nil {
		return nil, fmt.Errorf("envelope: nonce: %w", err)
	}
	return key.Seal(dst, dst[n:], body, aad(id, u, flags|encrypted)), nil
}

// nonce fills b with a new nonce from c.Rand, or crypto/rand.
func (c *Codec) nonce(b []byte) (int, error) {
	if c.Rand != nil {
		return io.ReadFull(c.Rand, b)
	}
	return rand.Read(b)
}

// MaxSize bounds the stored size of a value of n bytes, so a caller can
// size the buffer it wraps into once.
func (c *Codec) MaxSize(n int) int {
	size := n + 2
	if c.Compression != None && n >= c.Above {
		size = max(size, 2+s2.MaxEncodedLen(n), 2+n+n/64+64) // zstd's bound is under the last
	}
	if c.Ring != nil {
		size += 3 + 255 + NonceSize + 16
	}
	return size
}

// WrapString is Wrap for a string value, returned as a string.
func (c *Codec) WrapString(s, id string, u Use) (string, error) {
	if c.Ring == nil && (c.Compression == None || len(s) < c.Above || s == "") && !WrappedString(s) {
		return s, nil // the common case, without a copy
	}
	b, err := c.Wrap(nil, []byte(s), id, u)
	return string(b), err
}

// Open returns the value b stores: b itself when it is plain, else its
// body decrypted and decompressed, at most limit bytes (DefaultLimit when
// limit is 0 or less) in all, however many frames it holds. With a Ring, a value that is not
// encrypted is ErrPlaintext unless c.AllowPlain. Errors wrap
// ErrUnknownKey, ErrCorrupt, ErrTooLarge, ErrPlaintext, ErrNoDict or
// ErrDictUnavailable, and name the key's or the dictionary's ID where
// there is one.
func (c *Codec) Open(b []byte, id string, u Use, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if c.Ring != nil && !c.AllowPlain && u != Error && !sealed(b) {
		return nil, fmt.Errorf("%w: %s (queue.Config.AllowPlaintext accepts such values during a migration to encryption)", ErrPlaintext, plainForm(b))
	}
	if !Wrapped(b) {
		return b, nil
	}
	if len(b) >= 2 && b[1] == codecDict {
		return c.openDict(b, limit)
	}
	if len(b) < 2 || b[1]&^known != 0 || b[1]&codecMask == codecMask {
		return nil, fmt.Errorf("%w: %d bytes, flags %#x", ErrCorrupt, len(b), flagsOf(b))
	}
	flags, body := b[1], b[2:]
	if flags&encrypted != 0 {
		kid := KeyID(b)
		if kid == "" {
			return nil, fmt.Errorf("%w: encrypted, but its key ID is cut short (%d bytes)", ErrCorrupt, len(b))
		}
		if c.Ring == nil {
			return nil, noRingError(kid)
		}
		key := c.Ring.aead(kid)
		if key == nil {
			return nil, fmt.Errorf("%w: key %q", ErrUnknownKey, kid)
		}
		rest := b[3+len(kid):]
		if len(rest) < NonceSize+key.Overhead() {
			return nil, fmt.Errorf("%w: encrypted with key %q, cut short at %d bytes", ErrCorrupt, kid, len(b))
		}
		plain, err := key.Open(nil, rest[:NonceSize], rest[NonceSize:], aad(id, u, flags))
		if err != nil {
			return nil, fmt.Errorf("%w: encrypted with key %q, does not authenticate: tampered with, or not this task's", ErrCorrupt, kid)
		}
		body = plain
	}
	switch flags & codecMask {
	case codecS2:
		return unS2(body, limit)
	case codecZstd:
		return unZstd(body, limit)
	}
	if flags&encrypted == 0 {
		body = append([]byte(nil), body...) // not an alias of the stored bytes' envelope
	}
	return body, nil
}

// OpenString is Open for a string value.
func (c *Codec) OpenString(s, id string, u Use, limit int) (string, error) {
	if !WrappedString(s) {
		return s, nil
	}
	b, err := c.Open([]byte(s), id, u, limit)
	return string(b), err
}

// sealed reports whether b is an encrypted envelope.
func sealed(b []byte) bool {
	return len(b) >= 2 && b[0] == Magic && b[1]&encrypted != 0
}

// plainForm says what form a value that is not encrypted has, for
// ErrPlaintext.
func plainForm(b []byte) string {
	switch {
	case !Wrapped(b):
		return fmt.Sprintf("a plain value of %d bytes", len(b))
	case len(b) >= 2 && b[1] == codecDict:
		return "compressed against a dictionary"
	}
	return fmt.Sprintf("an envelope of flags %#x, without the encrypted flag", flagsOf(b))
}

func flagsOf(b []byte) byte {
	if len(b) < 2 {
		return 0
	}
	return b[1]
}

// aad is the additional data of a value's encryption: its use, its
// envelope's flags and its task's stored ID. The flags are bound too, so
// a sealed value whose compression bits were changed in Redis does not
// open (its still compressed plaintext read as the value, say).
func aad(id string, u Use, flags byte) []byte {
	return append([]byte{byte(u), flags}, id...)
}

// Compression is how a Codec compresses values.
type Compression int

// The compressions.
const (
	// Fast is S2, for the least CPU.
	Fast Compression = iota
	// Small is zstd at its fastest level: smaller, for more CPU.
	Small
	// None stores values uncompressed.
	None
)

// String returns the compression's name.
func (c Compression) String() string {
	switch c {
	case Fast:
		return "fast"
	case Small:
		return "small"
	case None:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// zstdMagic opens every zstd frame. The envelope's flags already say
// zstd, so it is left out of the stored body: 4 bytes less per value.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// compressTo appends b compressed by c to dst, and returns it with the
// flags that name the compression.
func compressTo(c Compression, dst, b []byte) ([]byte, byte) {
	start := len(dst)
	if c == Small {
		out := zstdCodec().enc.EncodeAll(b, slices.Grow(dst, len(b)))
		if bytes.HasPrefix(out[start:], zstdMagic) {
			out = append(out[:start], out[start+len(zstdMagic):]...)
		}
		return out, codecZstd
	}
	dst = slices.Grow(dst, s2.MaxEncodedLen(len(b)))
	enc := s2.Encode(dst[start:cap(dst)], b)
	return dst[:start+len(enc)], codecS2
}

func unS2(b []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(b)
	if err != nil {
		return nil, fmt.Errorf("%w: s2: %v", ErrCorrupt, err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: s2 body of %d bytes, limit %d", ErrTooLarge, n, limit)
	}
	out, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: s2: %v", ErrCorrupt, err)
	}
	return out, nil
}

func unZstd(b []byte, limit int) ([]byte, error) {
	b = append(append(make([]byte, 0, len(zstdMagic)+len(b)), zstdMagic...), b...)
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
	}
	if h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("%w: zstd body of %d bytes, limit %d", ErrTooLarge, h.FrameContentSize, limit)
	}
	// The decoder stops at its buffer's capacity (WithDecodeAllCapLimit),
	// and a body may hold more frames than the first, whose header alone
	// was read above. One frame, as Wrap writes, fits its stated size
	// exactly (the encoder states none under 256 bytes); a body that needs
	// more is tried once more with room for the limit, and no more.
	size := uint64(256)
	if h.HasFCS {
		size = h.FrameContentSize
	}
	size = min(size, uint64(limit))
	out, err := zstdCodec().dec.DecodeAll(b, make([]byte, 0, size))
	if err != nil && size < uint64(limit) {
		out, err = zstdCodec().dec.DecodeAll(b, make([]byte, 0, limit))
	}
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, fmt.Errorf("%w: zstd frames that hold more in all, limit %d", ErrTooLarge, limit)
	case err != nil:
		// past the limit within a block reads "output bigger than max
		// block size": corrupt, or too large
		return nil, fmt.Errorf("%w: zstd within the limit of %d bytes: %v", ErrCorrupt, limit, err)
	}
	return out, nil
}

// zstd's encoder and decoder are safe for concurrent EncodeAll and
// DecodeAll, and costly to build: one of each per process, built on
// first use.
var zstdCodec = sync.OnceValue(func() (z struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}) {
	z.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true))
	z.dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithDecoderLowmem(true),
		zstd.WithDecodeAllCapLimit(true)) // unZstd sizes the buffer as the limit
	return z
})

// newAEAD returns AES-256-GCM under key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// noRingError is ErrUnknownKey where there is no ring at all: "not in
// the key ring" would send a reader looking for a key in a ring it does
// not have.
type noRingError string

func (e noRingError) Error() string {
	return fmt.Sprintf("encrypted with key %q, and no key ring is configured to decrypt it", string(e))
}

func (e noRingError) Is(target error) bool { return target == ErrUnknownKey }
