package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformed reports msgpack bytes that no decoder may be given: a
// length or count that the bytes present cannot hold, nesting deeper than
// MaxDepth, bytes cut short, or a byte that starts no value. The message
// names the offending length and where it is.
var ErrMalformed = errors.New("malformed msgpack")

// MaxDepth bounds how deeply msgpack arrays and maps may nest, as
// encoding/json bounds JSON: msgpack's decoder recurses once per level, on
// the goroutine's stack.
const MaxDepth = 10_000

// maxDepth is MaxDepth, but for the fuzz targets: at their depth a deep
// input costs the fuzzer's minimizer microseconds, not milliseconds.
var maxDepth = MaxDepth

// msgpack v5.4.1 sizes what it allocates by the counts and lengths a
// value claims, not by the bytes that follow them: an array header that
// claims 2^32-1 elements makes a slice of that many before reading one,
// and the process dies of it (an out-of-memory error is fatal, not a
// panic). So every msgpack value from Redis or a caller is walked first,
// by Check: each count must fit the bytes left, and the whole value must
// be there. Once it is, what the decoder allocates is bounded by the
// value's size: every element it makes room for is one the walk found.
//
// One quirk of the decoder needs more: where it decodes a map, it reads
// past an extension's header to a map header that follows, whatever
// length the extension claims. So the bytes of an extension's body may be
// read as a map. The walk accepts such an extension only when its body is
// exactly one well-formed map; a timestamp (type -1) whose body merely
// opens with a map's byte, as many do, is rewritten as the same instant in
// the 12-byte form, whose body opens with a byte below 0x40 (Normalize).

// Check reports whether b opens with a msgpack value the decoder may be
// given: nil, or an error wrapping ErrMalformed that names the offending
// length and its offset. Bytes after the first value are not looked at,
// as the decoder does not read them. It allocates nothing unless it fails,
// and costs one pass over the value.
func Check(b []byte) error {
	_, err := check(b)
	return err
}

// check walks b and reports whether a timestamp in it must be rewritten
// before b is decoded.
func check(b []byte) (fix bool, err error) {
	w := walker{b: b}
	if err := w.value(0); err != nil {
		return false, err
	}
	return w.fix, nil
}

// Normalize returns b when it may be decoded as it is, or a copy of it in
// which each timestamp whose body opens with a map's byte is written in
// the 12-byte form: the same value, which the decoder cannot misread (see
// above). Errors are Check's.
func Normalize(b []byte) ([]byte, error) {
	fix, err := check(b)
	if err != nil || !fix {
		return b, err
	}
	w := walker{b: b, rewrite: true, out: make([]byte, 0, len(b)+len(b)/2)}
	if err := w.value(0); err != nil {
		return nil, err // check passed: unreachable
	}
	return append(w.out, b[w.last:]...), nil
}

// Unmarshal decodes the msgpack value b opens with into v, as
// msgpack.Unmarshal does, once Check accepts it: every msgpack decode of
// bytes from Redis or a caller goes through here or NewDecoder. A panic of
// the decoder (a map key of a type Go cannot hash) is an error too.
func Unmarshal(b []byte, v any) error {
	b, err := Normalize(b)
	if err != nil {
		return err
	}
	return unmarshalChecked(b, v)
}

// unmarshalChecked is Unmarshal of bytes Normalize returned.
func unmarshalChecked(b []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack: decode into %T: %v", v, r)
		}
	}()
	return msgpack.Unmarshal(b, v)
}

// NewDecoder returns a msgpack decoder over the value b opens with, once
// Check accepts it, for a caller that reads field by field.
func NewDecoder(b []byte) (*msgpack.Decoder, error) {
	b, err := Normalize(b)
	if err != nil {
		return nil, err
	}
	return msgpack.NewDecoder(bytes.NewReader(b)), nil
}

// errAlt is the failure of a walk of an ext's body as a map (walker.alt):
// never shown, so not worth formatting, or allocating.
var errAlt = errors.New("wire: an ext's body is not one map")

// walker walks one msgpack value; see Check.
type walker struct {
	b []byte
	i int
	// owed is how many values the open arrays and maps still need after
	// the one being read: each takes at least a byte.
	owed int64
	// alt is set while the walk reads an extension's body as the map the
	// decoder may take it for: a timestamp there is not rewritten.
	alt bool
	fix bool // a timestamp must be rewritten

	rewrite bool   // Normalize's pass: copy b to out, timestamps rewritten
	out     []byte // the copy so far, up to b[last:]
	last    int
}

// malformed returns the error of a length n that a value at offset at
// claims, of unit (elements, entries, bytes), where rem bytes remain.
func (w *walker) malformed(kind string, at int, n int64, unit string, rem int64) error {
	if w.owed > 0 {
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: %s at byte %d claims %d %s; %d bytes remain, and the values after it need %d of them",
			ErrMalformed, kind, at, n, unit, rem, w.owed)
	}
	if w.alt {
		return errAlt
	}
	return fmt.Errorf("%w: %s at byte %d claims %d %s; %d bytes remain", ErrMalformed, kind, at, n, unit, rem)
}

// size reads the big-endian length of k bytes after the code at offset
// at.
func (w *walker) size(kind string, at, k int) (int64, error) {
	if len(w.b)-w.i < k {
		if w.alt {
			return 0, errAlt
		}
		return 0, fmt.Errorf("%w: %s at byte %d: its length is cut short (%d of %d bytes)", ErrMalformed, kind, at, len(w.b)-w.i, k)
	}
	var n int64
	for _, c := range w.b[w.i : w.i+k] {
		n = n<<8 | int64(c)
	}
	w.i += k
	return n, nil
}

// skip steps over n bytes of a value at offset at, which must be there
// with a byte for each value owed after them.
func (w *walker) skip(kind string, at int, n int64) error {
	if rem := int64(len(w.b) - w.i); n > rem-w.owed {
		if n <= rem {
			if w.alt {
				return errAlt
			}
			return w.malformed(kind, at, n, "bytes", rem)
		}
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: %s at byte %d claims %d bytes; %d remain", ErrMalformed, kind, at, n, rem)
	}
	w.i += int(n)
	return nil
}

// fixed steps over a number of n bytes at offset at.
func (w *walker) fixed(at, n int) error {
	if len(w.b)-w.i < n {
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: number at byte %d is cut short: %d of its %d bytes", ErrMalformed, at, len(w.b)-w.i, n)
	}
	w.i += n
	return nil
}

// value walks the value at w.i, at nesting depth.
func (w *walker) value(depth int) error {
	at := w.i
	if at >= len(w.b) {
		if at == 0 {
			if w.alt {
				return errAlt
			}
			return fmt.Errorf("%w: no bytes", ErrMalformed)
		}
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: cut short at byte %d, where a value should start", ErrMalformed, at)
	}
	if rem := int64(len(w.b) - at); rem <= w.owed {
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: cut short: %d bytes remain at byte %d for the %d values still to come", ErrMalformed, rem, at, w.owed+1)
	}
	c := w.b[at]
	w.i++
	switch {
	case c <= 0x7f || c >= 0xe0: // fixints
		return nil
	case c <= 0x8f:
		return w.container("map", at, int64(c&0x0f), 2, depth)
	case c <= 0x9f:
		return w.container("array", at, int64(c&0x0f), 1, depth)
	case c <= 0xbf:
		return w.skip("str", at, int64(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return nil
	case 0xc4, 0xc5, 0xc6:
		return w.sized("bin", at, 1<<(c-0xc4))
	case 0xd9, 0xda, 0xdb:
		return w.sized("str", at, 1<<(c-0xd9))
	case 0xca, 0xce, 0xd2:
		return w.fixed(at, 4)
	case 0xcb, 0xcf, 0xd3:
		return w.fixed(at, 8)
	case 0xcc, 0xd0:
		return w.fixed(at, 1)
	case 0xcd, 0xd1:
		return w.fixed(at, 2)
	case 0xdc, 0xdd:
		n, err := w.size("array", at, 2<<(c-0xdc))
		if err != nil {
			return err
		}
		return w.container("array", at, n, 1, depth)
	case 0xde, 0xdf:
		n, err := w.size("map", at, 2<<(c-0xde))
		if err != nil {
			return err
		}
		return w.container("map", at, n, 2, depth)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return w.ext(at, 1<<(c-0xd4), depth)
	case 0xc7, 0xc8, 0xc9:
		n, err := w.size("ext", at, 1<<(c-0xc7))
		if err != nil {
			return err
		}
		return w.ext(at, n, depth)
	}
	if w.alt {
		return errAlt
	}
	return fmt.Errorf("%w: byte %#x at byte %d starts no value", ErrMalformed, c, at)
}

// sized walks a str or bin whose length takes k bytes.
func (w *walker) sized(kind string, at, k int) error {
	n, err := w.size(kind, at, k)
	if err != nil {
		return err
	}
	return w.skip(kind, at, n)
}

// container walks an array of n elements or a map of n entries (per
// values each).
func (w *walker) container(kind string, at int, n, per int64, depth int) error {
	if depth >= maxDepth {
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: %s at byte %d nests deeper than %d levels", ErrMalformed, kind, at, maxDepth)
	}
	unit := "elements"
	if per == 2 {
		unit = "entries"
	}
	rem := int64(len(w.b) - w.i)
	if n*per > rem-w.owed {
		if w.alt {
			return errAlt
		}
		return w.malformed(kind, at, n, unit, rem)
	}
	w.owed += n * per
	for range n * per {
		w.owed--
		if err := w.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// ext walks an extension whose body is n bytes, its type byte next.
func (w *walker) ext(at int, n int64, depth int) error {
	if err := w.skip("ext", at, 1); err != nil {
		if w.alt {
			return errAlt
		}
		return fmt.Errorf("%w: ext at byte %d: its type is cut short", ErrMalformed, at)
	}
	typ := int8(w.b[w.i-1])
	start := w.i
	if err := w.skip("ext", at, n); err != nil {
		return err
	}
	// What the decoder reads where it wants a map: the byte after the
	// header, which may lie past the body when the body is empty.
	if start >= len(w.b) || !opensMap(w.b[start]) {
		return nil
	}
	// The body is one whole map, and so reads the same either way?
	sub := walker{b: w.b[:start+int(n)], i: start, alt: true}
	if err := sub.value(depth + 1); err == nil && sub.i == start+int(n) {
		return nil
	}
	if typ == -1 && (n == 4 || n == 8 || n == 12) && !w.alt {
		w.fix = true
		if w.rewrite {
			w.out = append(w.out, w.b[w.last:at]...)
			w.out = appendTimestamp96(w.out, w.b[start:start+int(n)])
			w.last = w.i
		}
		return nil
	}
	if w.alt {
		return errAlt
	}
	return fmt.Errorf("%w: ext of type %d at byte %d: its %d-byte body opens with a map header (%#x) that a decoder wanting a map reads past the ext",
		ErrMalformed, typ, at, n, w.b[start])
}

// opensMap reports whether a decoder that wants a map reads c as one, or
// as nil.
func opensMap(c byte) bool {
	return c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf || c == 0xc0
}

// appendTimestamp96 appends the timestamp of body (4, 8 or 12 bytes, as
// msgpack's timestamp extension holds it) in its 12-byte form: the
// nanoseconds (below 10^9, so the first byte is below 0x40) then the
// seconds.
func appendTimestamp96(b, body []byte) []byte {
	var sec, nsec int64
	switch len(body) {
	case 4:
		sec = int64(binary.BigEndian.Uint32(body))
	case 8:
		v := binary.BigEndian.Uint64(body)
		sec, nsec = int64(v&0x3_ffff_ffff), int64(v>>34)
	default:
		nsec = int64(binary.BigEndian.Uint32(body))
		sec = int64(binary.BigEndian.Uint64(body[4:]))
	}
	// as the decoder reads it: time.Unix carries nanoseconds of a second
	// or more into the seconds
	t := time.Unix(sec, nsec)
	b = append(b, 0xc7, 12, 0xff)
	b = binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix()))
}
