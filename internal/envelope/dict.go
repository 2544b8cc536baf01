package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
)

// A small document shares most of its bytes with the documents of its
// kind: its keys, its layout, its common values. Compressed alone it
// cannot refer to them; against a dictionary made of earlier documents of
// its kind it can. A value compressed that way is
//
//	0xC1 flags(codecDict) dictID(8 bytes) s2body
//
// and never encrypted: a dictionary holds payloads' bytes in clear, so
// producers with a key ring make none. Dictionaries are stored in Redis
// under their ID, the first 8 bytes of their SHA-256, and never change.

// codecDict is S2 against a dictionary, the fourth compression.
const codecDict byte = 0x03

// DictIDSize is the bytes of a dictionary's ID in a value.
const DictIDSize = 8

// Errors of a dictionary that cannot be had.
var (
	// ErrNoDict reports a value compressed against a dictionary that Redis
	// does not hold: it cannot open until the dictionary is put back.
	ErrNoDict = errors.New("compressed against a dictionary that is not stored")
	// ErrDictUnavailable reports a dictionary that could not be read (Redis
	// failed): the value may open later.
	ErrDictUnavailable = errors.New("its compression dictionary could not be read")
)

// Dict is a dictionary values are compressed against.
type Dict struct {
	ID    string // hex of DictIDSize bytes
	Bytes []byte // what is stored
	raw   [DictIDSize]byte
	d     *s2.Dict
}

// NewDict returns the dictionary of sample, or nil when sample is too
// short or too long to make one (s2: 16 bytes to 64 KiB).
func NewDict(sample []byte) *Dict {
	d := s2.NewDict(s2.MakeDict(sample, nil).Bytes())
	if d == nil {
		return nil
	}
	return dictOf(d.Bytes(), d)
}

// LoadDict reads a dictionary as NewDict's Bytes stored it; nil when b is
// not one.
func LoadDict(b []byte) *Dict {
	d := s2.NewDict(b)
	if d == nil {
		return nil
	}
	return dictOf(b, d)
}

func dictOf(b []byte, d *s2.Dict) *Dict {
	sum := sha256.Sum256(b)
	out := &Dict{Bytes: b, d: d}
	copy(out.raw[:], sum[:DictIDSize])
	out.ID = hex.EncodeToString(out.raw[:])
	return out
}

// WrapDict returns b compressed against d, appended to dst, when that
// makes it smaller than c.Wrap would; else c.Wrap's form. A Codec with a
// key ring never uses a dictionary.
func (c *Codec) WrapDict(dst, b []byte, d *Dict, id string, u Use) ([]byte, error) {
	if d == nil || c.Ring != nil || c.Compression == None || len(b) < c.Above || len(b) == 0 {
		return c.Wrap(dst, b, id, u)
	}
	start := len(dst)
	dst = append(dst, Magic, codecDict)
	dst = append(dst, d.raw[:]...)
	n := len(dst)
	dst = slices.Grow(dst, s2.MaxEncodedLen(len(b)))
	body := d.d.Encode(dst[n:cap(dst)], b) // in place: there is room
	if len(body) >= len(b)*3/4 {
		// the dictionary does not fit this value: its own compression
		return c.Wrap(dst[:start], b, id, u)
	}
	return dst[:n+len(body)], nil
}

// DictID returns the hex ID of the dictionary b is compressed against, or
// "".
func DictID(b []byte) string {
	if len(b) < 2+DictIDSize || b[0] != Magic || b[1] != codecDict {
		return ""
	}
	return hex.EncodeToString(b[2 : 2+DictIDSize])
}

// openDict opens a value compressed against a dictionary, which c.Dicts
// finds.
func (c *Codec) openDict(b []byte, limit int) ([]byte, error) {
	if len(b) < 2+DictIDSize {
		return nil, fmt.Errorf("%w: a dictionary's ID cut short at %d bytes", ErrCorrupt, len(b))
	}
	id := hex.EncodeToString(b[2 : 2+DictIDSize])
	if c.Dicts == nil {
		return nil, fmt.Errorf("%w: dictionary %s, and nothing to read it from", ErrDictUnavailable, id)
	}
	d, err := c.Dicts.Get(id)
	if err != nil {
		return nil, err
	}
	body := b[2+DictIDSize:]
	n, err := s2.DecodedLen(body)
	if err != nil {
		return nil, fmt.Errorf("%w: s2 against dictionary %s: %v", ErrCorrupt, id, err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: s2 body of %d bytes, limit %d", ErrTooLarge, n, limit)
	}
	out, err := d.d.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("%w: s2 against dictionary %s: %v", ErrCorrupt, id, err)
	}
	return out, nil
}

// Dicts finds dictionaries by ID: in its cache, else through Load, whose
// answer it keeps. Load returns nil bytes and no error for a dictionary
// that is not stored.
type Dicts struct {
	Load func(id string) ([]byte, error)

	mu    sync.Mutex
	cache map[string]*Dict
}

// Get returns the dictionary id. Errors wrap ErrNoDict or
// ErrDictUnavailable.
func (ds *Dicts) Get(id string) (*Dict, error) {
	ds.mu.Lock()
	d := ds.cache[id]
	ds.mu.Unlock()
	if d != nil {
		return d, nil
	}
	b, err := ds.Load(id)
	if err != nil {
		return nil, fmt.Errorf("%w: dictionary %s: %v", ErrDictUnavailable, id, err)
	}
	if b == nil {
		return nil, fmt.Errorf("%w: dictionary %s", ErrNoDict, id)
	}
	if d = LoadDict(b); d == nil || d.ID != id {
		return nil, fmt.Errorf("%w: dictionary %s is stored, but is not that dictionary", ErrCorrupt, id)
	}
	ds.mu.Lock()
	if ds.cache == nil {
		ds.cache = map[string]*Dict{}
	}
	ds.cache[id] = d
	ds.mu.Unlock()
	return d, nil
}
