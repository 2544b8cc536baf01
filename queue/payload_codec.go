package queue

import (
	"fmt"

	"github.com/shardq/shardq/internal/envelope"
)

// Compression is how Config stores payloads and results of at least
// Config.CompressAbove bytes.
type Compression = envelope.Compression

// The compressions of Config.Compression.
const (
	// CompressFast compresses with S2, for the least CPU. It is the
	// default.
	CompressFast = envelope.Fast
	// CompressSmall compresses with zstd: smaller than CompressFast, for
	// more CPU. BENCHMARKS.md compares them.
	CompressSmall = envelope.Small
	// CompressNone stores values as they are.
	CompressNone = envelope.None
)

// KeyRing holds the AES-256 keys of Config.KeyRing by ID. Writes use the
// Current key; reads use the key a value names, so a ring that keeps its
// older keys reads what they encrypted. A ring is read once, when first
// used: rotate by giving producers and workers a new ring. ParseKeyRing
// reads one from JSON.
type KeyRing = envelope.KeyRing

// ParseKeyRing reads a KeyRing from JSON, keys in standard base64:
//
//	{"current": "2026-11", "keys": {"2026-10": "<base64>", "2026-11": "<base64>"}}
//
// It checks the ring, as NewClient does.
func ParseKeyRing(b []byte) (*KeyRing, error) {
	r, err := envelope.ParseKeyRing(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return r, nil
}
