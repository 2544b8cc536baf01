package queue

import (
	"testing"

	"github.com/shardq/shardq/internal/config"
)

// TestDefaultPrefix: the prefix queue documents is the one its Config gets.
func TestDefaultPrefix(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil || c.Prefix != DefaultPrefix || DefaultPrefix != config.DefaultPrefix {
		t.Fatalf("Config{} has prefix %q (%v); DefaultPrefix %q", c.Prefix, err, DefaultPrefix)
	}
}
