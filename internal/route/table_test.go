package route

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
)

// TestTable: a queue's count is the Config's until an operator's layout is
// read, then the layout's route count; keys place a task on one partition
// and no key spreads tasks over all; a registry entry is written once and
// then known; a stale layout rides in the caller's round trip, a bad one
// is ignored.
func TestTable(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	tb := New("rt", map[string]int{"wide": 4}, slog.Default())
	if tb.Count("wide") != 4 || tb.Count("other") != 1 || tb.Pick("other", "") != 0 {
		t.Fatalf("counts before a layout: wide %d, other %d", tb.Count("wide"), tb.Count("other"))
	}
	seen := map[int]bool{}
	for range 8 {
		seen[tb.Pick("wide", "")] = true
	}
	if len(seen) != 4 {
		t.Fatalf("round-robin reached %v, want all 4 partitions", seen)
	}
	keyed := tb.Pick("wide", "tenant-7")
	for range 8 {
		if p := tb.Pick("wide", "tenant-7"); p != keyed {
			t.Fatalf("a key went to partitions %d and %d", keyed, p)
		}
	}
	if tb.Known("wide") || !tb.Stale("wide") || tb.Registered("wide") {
		t.Fatal("a queue this producer never wrote or read is known")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.HSet(ctx, keys.Layout("rt"), "wide", "2/4", "bad", "nonsense").Err())
	var fresh map[string]int
	var learn func()
	must(rcall.Pipelined(ctx, rdb, func(p *rcall.Pipe) error {
		fresh = tb.Register(ctx, p, slices.Values([]string{"wide", "wide", "bad"}))
		learn = tb.Learn(ctx, p, slices.Values([]string{"wide", "bad", "wide"}))
		return nil
	}))
	if len(fresh) != 2 || fresh["wide"] != 4 || learn == nil {
		t.Fatalf("Register wrote %v", fresh)
	}
	learn()
	tb.Remember(fresh)
	if n := rdb.HGet(ctx, keys.Queues("rt"), "wide").Val(); n != "4" {
		t.Fatalf("the registry holds %q for wide", n)
	}
	if tb.Count("wide") != 2 || tb.Count("bad") != 1 || tb.Stale("wide") {
		t.Fatalf("after the layouts were read: wide %d, bad %d", tb.Count("wide"), tb.Count("bad"))
	}
	// the entry was written with 4; the count is 2 now: write it again
	if tb.Registered("wide") || !tb.Registered("bad") || !tb.Known("bad") {
		t.Fatal("a registry entry of another count counts as written")
	}
	tb.Forget()
	if !tb.Stale("wide") || tb.Count("wide") != 4 {
		t.Fatal("Forget kept a layout")
	}
	must(tb.Read(ctx, rdb, []string{"wide"}))
	if tb.Count("wide") != 2 {
		t.Fatalf("Read: wide %d", tb.Count("wide"))
	}
}
