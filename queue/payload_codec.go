package queue

import (
	"fmt"
	"sync"

	"github.com/shardq/shardq/internal/envelope"
)

// KeyRing holds the AES-256 keys of Config.KeyRing by ID. Writes use the
// Current key; reads use the key a value names, so a ring that keeps its
// older keys reads what they encrypted. Rotate by adding a key, making it
// Current, and removing the old one only once nothing stored is still
// under it. A ring is read once, when first used: rotate by giving
// producers and workers a new ring. ParseKeyRing reads one from JSON.
type KeyRing struct {
	// Current is the ID of the key new values are encrypted with.
	Current string
	// Keys are the ring's keys by ID: 32 bytes each. An ID is 1 to 255
	// bytes, and stays in clear in every value it encrypts.
	Keys map[string][]byte

	once sync.Once
	ring *envelope.KeyRing
}

// engine returns the ring the codec uses, made from Current and Keys at
// the first call; nil for a nil r.
func (r *KeyRing) engine() *envelope.KeyRing {
	if r == nil {
		return nil
	}
	r.once.Do(func() { r.ring = &envelope.KeyRing{Current: r.Current, Keys: r.Keys} })
	return r.ring
}

// ParseKeyRing reads a KeyRing from JSON, keys in standard base64:
//
//	{"current": "2026-11", "keys": {"2026-10": "<base64>", "2026-11": "<base64>"}}
//
// It checks the ring, as NewClient does.
func ParseKeyRing(b []byte) (*KeyRing, error) {
	r, err := envelope.ParseKeyRing(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	k := &KeyRing{Current: r.Current, Keys: r.Keys}
	k.once.Do(func() { k.ring = r })
	return k, nil
}
