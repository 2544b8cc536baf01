package protocol

import (
	"context"
	"errors"
	"testing"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// TestClaim: the first writer records its version; a writer of the same
// major, older or newer minor, goes on and leaves it; one of another
// major is refused, as is a stored value that does not parse.
func TestClaim(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const prefix = "p"
	got, err := Claim(ctx, rdb, prefix, Current)
	if err != nil || got != Current {
		t.Fatalf("first Claim = %v, %v; want %v", got, err, Current)
	}
	if v := rdb.Get(ctx, keys.Protocol(prefix)).Val(); v != "1.0" {
		t.Fatalf("stored %q, want 1.0", v)
	}
	for _, v := range []Version{{1, 0}, {1, 3}} {
		if got, err := Claim(ctx, rdb, prefix, v); err != nil || got != Current {
			t.Errorf("Claim(%v) = %v, %v; want %v", v, got, err, Current)
		}
	}
	if got, err := Claim(ctx, rdb, prefix, Version{2, 0}); !errors.Is(err, ErrIncompatible) || got != Current {
		t.Errorf("Claim(2.0) = %v, %v; want %v and ErrIncompatible", got, err, Current)
	}
	if v := rdb.Get(ctx, keys.Protocol(prefix)).Val(); v != "1.0" {
		t.Errorf("stored %q after the refused claims, want 1.0", v)
	}
	rdb.Set(ctx, keys.Protocol(prefix), "one", 0)
	if _, err := Claim(ctx, rdb, prefix, Current); err == nil {
		t.Error("Claim over a bad stored version succeeded")
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]Version{"1.0": {1, 0}, "2.13": {2, 13}, "1.000": {1, 0}} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1", "0.1", "1.", ".1", "-1.0", "1.-1", "+1.0", "1.0.0", "1 .0", "1234567.0", "a.b"} {
		if v, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", s, v)
		}
	}
	if Current.String() != "1.0" {
		t.Errorf("Current is %v", Current)
	}
}
