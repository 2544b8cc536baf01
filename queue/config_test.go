package queue

import (
	"testing"

	"github.com/shardq/shardq/internal/config"
)

// TestDefaultPrefix: the prefix Config.Prefix documents is the one a
// Config without one gets.
func TestDefaultPrefix(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil || c.Prefix != "shardq" || config.DefaultPrefix != "shardq" {
		t.Fatalf("Config{} has prefix %q (%v); config.DefaultPrefix %q; want \"shardq\"", c.Prefix, err, config.DefaultPrefix)
	}
}
