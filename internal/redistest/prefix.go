package redistest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// maxPrefixName caps the part of a prefix taken from the test name.
const maxPrefixName = 64

// Prefix returns a uniqueness ID prefix for t, so tests sharing a server do not
// collide. It is t.Name() with every character outside [A-Za-z0-9_-]
// replaced by '_' (cut to 64 bytes), then '_' and 8 random hex digits, for
// example "TestQueue_retry_1f3a9c0e". It contains no ':' or braces, so it is
// safe inside a cluster hash tag: "{" + Prefix(t) + "}:jobs".
func Prefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > maxPrefixName {
		name = name[:maxPrefixName]
	}
	return fmt.Sprintf("%s_%08x", name, rand.Uint32())
}
