package protocol

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
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

// TestClaimForProducer: a producer claims as any writer, and refuses while
// a running worker follows no version (0.1.0) or another major, naming
// the worker and both versions; a worker of its major, or one whose
// heartbeat is older than Live, does not stop it.
func TestClaimForProducer(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const prefix = "p"
	worker := func(id string, beat time.Time, protocol string) {
		t.Helper()
		b, err := (&wire.WorkerStatus{Host: "h-" + id, PID: 7, Protocol: protocol}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		rdb.ZAdd(ctx, keys.Workers(prefix), redis.Z{Score: float64(beat.UnixMilli()), Member: id})
		rdb.HSet(ctx, keys.WorkerStatus(prefix), id, b)
	}
	if err := ClaimForProducer(ctx, rdb, prefix, Current, Live); err != nil {
		t.Fatalf("no workers: %v", err)
	}
	if v := rdb.Get(ctx, keys.Protocol(prefix)).Val(); v != "1.0" {
		t.Fatalf("stored %q, want 1.0", v)
	}
	worker("new", time.Now(), "1.0")
	worker("gone", time.Now().Add(-2*Live), "")
	worker("future", time.Now().Add(-2*Live), "2.0")
	if err := ClaimForProducer(ctx, rdb, prefix, Current, Live); err != nil {
		t.Fatalf("a worker of 1.0 and stopped old ones: %v", err)
	}
	worker("old", time.Now(), "")
	err := ClaimForProducer(ctx, rdb, prefix, Current, Live)
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("a running 0.1.0 worker: %v, want ErrIncompatible", err)
	}
	for _, want := range []string{"protocol 1.0", "old (h-old, pid 7)", "no protocol version (shardq 0.1.0)", "upgrade the workers first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "gone") {
		t.Errorf("the refusal %q names a worker whose heartbeat stopped", err)
	}
	worker("old", time.Now(), "2.3")
	if err := ClaimForProducer(ctx, rdb, prefix, Current, Live); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "follows protocol 2.3") {
		t.Fatalf("a running worker of 2.3: %v", err)
	}
	rdb.HDel(ctx, keys.WorkerStatus(prefix), "old")
	rdb.Set(ctx, keys.Protocol(prefix), "2.0", 0)
	if err := ClaimForProducer(ctx, rdb, prefix, Current, Live); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "p:protocol holds 2.0, this process follows 1.0") {
		t.Fatalf("a stored 2.0: %v", err)
	}
}

// TestClaimOnAFullRedis: a full Redis refuses the SET; the claim then
// reads the version, refuses another major, and lets a writer of the
// same major, or of a prefix with none, go on to drain it.
func TestClaimOnAFullRedis(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	rdb.Set(ctx, keys.Protocol("old"), "2.0", 0)
	rdb.Set(ctx, keys.Protocol("same"), "1.4", 0)
	// fill it: noeviction refuses writes past maxmemory
	// a limit below what an empty server uses: every write is refused
	// (noeviction), every read answered
	must(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	if err := rdb.Set(ctx, "probe", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("a SET past maxmemory: %v, want OOM", err)
	}
	if _, err := Claim(ctx, rdb, "old", Current); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Claim under 2.0 on a full Redis: %v, want ErrIncompatible", err)
	}
	if got, err := Claim(ctx, rdb, "same", Current); err != nil || got != (Version{1, 4}) {
		t.Errorf("Claim under 1.4 on a full Redis: %v, %v", got, err)
	}
	if got, err := Claim(ctx, rdb, "none", Current); err != nil || got != Current {
		t.Errorf("Claim of an unrecorded prefix on a full Redis: %v, %v", got, err)
	}
	if rdb.Exists(ctx, keys.Protocol("none")).Val() != 0 {
		t.Error("the claim recorded a version on a full Redis: the test did not fill it")
	}
	if err := ClaimForProducer(ctx, rdb, "old", Current, Live); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ClaimForProducer under 2.0 on a full Redis: %v, want ErrIncompatible", err)
	}
	if err := ClaimForProducer(ctx, rdb, "same", Current, Live); err != nil {
		t.Errorf("ClaimForProducer under 1.4 on a full Redis: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
