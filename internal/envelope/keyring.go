package envelope

import (
	"bytes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/shardq/shardq/internal/redact"
)

// ErrInvalidKeyRing reports a key ring that cannot be used: no current
// key, a key of the wrong size, or an ID out of bounds.
var ErrInvalidKeyRing = errors.New("invalid key ring")

// KeyRing holds the AES-256 keys that encrypt and decrypt values, by ID.
// Writes use the Current key; reads use whichever key a value names, so a
// ring that keeps its old keys reads what they encrypted. Rotate by adding
// a key, making it Current, and removing the old one only once nothing
// stored is still under it.
type KeyRing struct {
	// Current is the ID of the key new values are encrypted with.
	Current string
	// Keys are the ring's keys by ID: 32 bytes each. An ID is 1 to 255
	// bytes, and stays in clear in every value it encrypts.
	Keys map[string][]byte

	once  sync.Once
	err   error
	aeads map[string]cipher.AEAD
}

// Check reports what makes the ring unusable, wrapping
// ErrInvalidKeyRing, or nil.
func (r *KeyRing) Check() error {
	r.once.Do(r.build)
	return r.err
}

func (r *KeyRing) build() {
	if r.Current == "" {
		r.err = fmt.Errorf("%w: no Current key ID", ErrInvalidKeyRing)
		return
	}
	if _, ok := r.Keys[r.Current]; !ok {
		r.err = fmt.Errorf("%w: Current key %q is not among its Keys", ErrInvalidKeyRing, r.Current)
		return
	}
	r.aeads = make(map[string]cipher.AEAD, len(r.Keys))
	for _, id := range r.IDs() {
		key := r.Keys[id]
		if id == "" || len(id) > 255 {
			r.err = fmt.Errorf("%w: key ID %q is %d bytes, want 1 to 255", ErrInvalidKeyRing, id, len(id))
			return
		}
		if len(key) != 32 {
			r.err = fmt.Errorf("%w: key %q is %d bytes, want 32 (AES-256)", ErrInvalidKeyRing, id, len(key))
			return
		}
		a, err := newAEAD(key)
		if err != nil {
			r.err = fmt.Errorf("%w: key %q: %v", ErrInvalidKeyRing, id, err)
			return
		}
		r.aeads[id] = a
	}
}

// IDs returns the ring's key IDs in order.
func (r *KeyRing) IDs() []string {
	ids := make([]string, 0, len(r.Keys))
	for id := range r.Keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// current returns the AEAD of the Current key and its ID. A ring is
// checked (Check) before it is used, so both are there.
func (r *KeyRing) current() (cipher.AEAD, string) {
	r.once.Do(r.build)
	return r.aeads[r.Current], r.Current
}

// aead returns the AEAD of key id, or nil.
func (r *KeyRing) aead(id string) cipher.AEAD {
	r.once.Do(r.build)
	return r.aeads[id]
}

// keyFile is the JSON form of a key ring: keys in standard base64.
type keyFile struct {
	Current string            `json:"current"`
	Keys    map[string]string `json:"keys"`
}

// ParseKeyRing reads a key ring from JSON:
//
//	{"current": "2026-11", "keys": {"2026-10": "<base64>", "2026-11": "<base64>"}}
//
// where each key is 32 bytes in standard base64. The ring is checked.
//
// A field it does not know is refused, naming it, so that a typo
// ("curent") says what is wrong rather than that no key is current.
// No message quotes a key.
func ParseKeyRing(b []byte) (*KeyRing, error) {
	var f keyFile
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKeyRing, redact.JSONError(err, "current and keys"))
	}
	if d.More() {
		return nil, fmt.Errorf("%w: more JSON after the key ring's object, at byte %d", ErrInvalidKeyRing, d.InputOffset())
	}
	r := &KeyRing{Current: f.Current, Keys: make(map[string][]byte, len(f.Keys))}
	for id, s := range f.Keys {
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q is not standard base64: %v", ErrInvalidKeyRing, id, err)
		}
		r.Keys[id] = k
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return r, nil
}
