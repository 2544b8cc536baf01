package redistest_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

func TestPrefix(t *testing.T) {
	t.Parallel()
	t.Run("sub test/with spaces:{tag}", func(t *testing.T) {
		t.Parallel()
		a, b := redistest.Prefix(t), redistest.Prefix(t)
		if a == b {
			t.Fatalf("Prefix returned %q twice", a)
		}
		re := regexp.MustCompile(`^TestPrefix_sub_test_with_spaces__tag__[0-9a-f]{8}$`)
		if !re.MatchString(a) {
			t.Fatalf("Prefix = %q, want match for %s", a, re)
		}
	})
	t.Run(strings.Repeat("x", 200), func(t *testing.T) {
		t.Parallel()
		if p := redistest.Prefix(t); len(p) != 64+9 {
			t.Fatalf("len(Prefix) = %d, want %d: %q", len(p), 64+9, p)
		}
	})
}
