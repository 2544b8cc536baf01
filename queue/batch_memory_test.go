package queue

import (
	"context"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// TestBatchMemory measures, on a private redis-server, what a running
// batch costs per member (its workflow's hash, MEMORY USAGE: a member is
// a node whose edges to the callbacks are implicit, so it costs its
// route and its state) and what a member costs in Redis over a plain
// pending task (used_memory: the node's fields, and the flow ref in its
// message; on one server no ID claim), and that a finished batch's hash
// gets its retention. Add costs one round trip per thousand members on
// one server. Run with -v for the figures.
func TestBatchMemory(t *testing.T) {
	t.Parallel()
	const n = 10_000
	b := setup(t, Config{})
	ctx := context.Background()
	used := func() int64 { return usedMemoryTB(t, b.rdb) }
	tasks := func(q string) []*Task {
		out := make([]*Task, n)
		for i := range out {
			out[i] = NewRawTask("member", make([]byte, 100), In(q))
		}
		return out
	}
	b.warm(t)
	m0 := used()
	_, err := b.client.EnqueueMany(ctx, tasks("plain"))
	must(t, err)
	m1 := used()
	batch, err := b.client.NewBatch(ctx, BatchOptions{
		OnSuccess: NewRawTask("cb", nil, In("cb")), OnComplete: NewRawTask("cb", nil, In("cb"))})
	must(t, err)
	members := tasks("flow")
	W := keys.Home(b.cfg.Prefix, keys.HomeOf(batch)).Workflow(batch)
	h0, err := b.rdb.MemoryUsage(ctx, W, 0).Result()
	must(t, err)
	b.hook.reset()
	_, err = b.client.AddToBatch(ctx, batch, members...)
	must(t, err)
	// a thousand members per call, each released into its queue by the
	// call that records it; the first registers the queue, a cold
	// script cache costs one EVAL more
	if rt, want := b.hook.roundTrips.Load(), int64(n/maxAddStep); rt > want+2 {
		t.Fatalf("Add of %d members took %d round trips, want %d", n, rt, want)
	}
	m2 := used()
	hash, err := b.rdb.MemoryUsage(ctx, W, 0).Result()
	must(t, err)
	plain, member := float64(m1-m0)/n, float64(m2-m1)/n
	t.Logf("plain pending task: %.0f bytes; batch member: %.0f bytes (%.0f more); workflow hash: %.1f bytes per member (MEMORY USAGE, %d members)",
		plain, member, member-plain, float64(hash-h0)/n, n)
	if float64(hash-h0)/n > 100 {
		t.Fatalf("workflow hash: %.1f bytes per member, want at most 100", float64(hash-h0)/n)
	}
	if out := b.rdb.ZCard(ctx, keys.Home(b.cfg.Prefix, keys.HomeOf(batch)).Out()).Val(); out != 0 {
		t.Fatalf("outbox holds %d entries after Add", out)
	}
	// a finished batch's hash expires after the retention: its members
	// succeed (as their notifications would say), it is closed, and its
	// callbacks succeed
	sid := keys.ShortID(batch)
	ref := func(node string) string {
		return wire.FlowRef{Kind: 'w', Home: keys.HomeOf(batch), ID: sid, Node: node}.String()
	}
	var notes []any
	fields, err := b.rdb.HKeys(ctx, W).Result()
	must(t, err)
	note := func(node string) {
		v, err := msgpack.Marshal([]any{ref(node), "x", "s", "", ""})
		must(t, err)
		notes = append(notes, string(v))
	}
	for _, f := range fields {
		if node, ok := strings.CutPrefix(f, "s:"); ok && node != home.Gate && node != home.OnSuccess && node != home.OnComplete {
			note(node)
		}
	}
	if len(notes) != n {
		t.Fatalf("the batch's hash has %d members, want %d", len(notes), n)
	}
	note(home.OnSuccess) // released by the members' successes
	note(home.OnComplete)
	must(t, b.client.CloseBatch(ctx, batch))
	h := keys.Home(b.cfg.Prefix, keys.HomeOf(batch))
	for from := 0; from < len(notes); from += 500 {
		must(t, script.HomeNotify.Run(ctx, b.rdb, []string{h.Out()}, append([]any{h.H, ""}, notes[from:min(from+500, len(notes))]...)...).Err())
	}
	ttl := b.rdb.PTTL(ctx, W).Val()
	if ttl <= 0 || ttl > b.client.cfg.WorkflowRetention {
		t.Fatalf("%s: TTL %v after it finished, want the retention %v", W, ttl, b.client.cfg.WorkflowRetention)
	}
}
