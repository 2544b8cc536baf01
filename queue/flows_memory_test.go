package queue

import (
	"context"
	"testing"

	"github.com/shardq/shardq/internal/keys"
)

// TestBatchMemory measures, on a private redis-server, what a running
// batch costs per member (its members hash, MEMORY USAGE) and what a
// member costs in Redis over a plain pending task (used_memory: the
// members hash, the ID claim that makes delivery idempotent, the flow ref
// in its message), and that a finished batch's keys get their retention.
// Add costs three round trips per thousand members. Run with -v for the
// figures.
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
	batch, err := b.client.NewBatch(ctx)
	must(t, err)
	members := tasks("flow")
	b.hook.reset()
	_, err = batch.Add(ctx, members...)
	must(t, err)
	// a thousand members per step: register, enqueue (pipelined over the
	// partitions), remove from the outbox; the first enqueue registers the
	// queue, a pipeline either way; a cold script cache costs one EVAL more
	if rt, want := b.hook.roundTrips.Load(), int64(3*n/maxAddStep); rt > want+1 {
		t.Fatalf("Add of %d members took %d round trips, want %d", n, rt, want)
	}
	m2 := used()
	h := keys.Home(b.cfg.Prefix, keys.HomeOf(batch.ID()))
	hash, err := b.rdb.MemoryUsage(ctx, h.Members(batch.ID()), 0).Result()
	must(t, err)
	plain, member := float64(m1-m0)/n, float64(m2-m1)/n
	t.Logf("plain pending task: %.0f bytes; batch member: %.0f bytes (%.0f more); members hash: %.1f bytes per member (MEMORY USAGE, %d members)",
		plain, member, member-plain, float64(hash)/n, n)
	if float64(hash)/n > 100 {
		t.Fatalf("members hash: %.1f bytes per member, want at most 100", float64(hash)/n)
	}
	if out := b.rdb.ZCard(ctx, h.Out()).Val(); out != 0 {
		t.Fatalf("outbox holds %d entries after Add", out)
	}
	// a finished batch's keys expire after the retention
	must(t, b.rdb.HSet(ctx, h.Batch(batch.ID()), "pending", 0, "succeeded", n).Err())
	must(t, batch.Close(ctx))
	for _, key := range []string{h.Batch(batch.ID()), h.Members(batch.ID())} {
		ttl := b.rdb.PTTL(ctx, key).Val()
		if ttl <= 0 || ttl > b.client.cfg.FlowRetention {
			t.Fatalf("%s: TTL %v after it finished, want the retention %v", key, ttl, b.client.cfg.FlowRetention)
		}
	}
}
