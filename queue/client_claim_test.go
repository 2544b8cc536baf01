package queue

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// TestClientClaimsTheProtocol: a client records the protocol version at
// its first write; under a prefix of another major, or while a 0.1.0
// worker runs, every write is refused with both versions named and
// nothing is written; once the worker is gone, the next call goes on.
func TestClientClaimsTheProtocol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	pkey := keys.Protocol(b.cfg.Prefix)
	b.rdb.Set(ctx, pkey, "2.1", 0)
	refused := func(what string, says ...string) {
		t.Helper()
		_, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("x")), In("q"))
		_, errMany := b.client.EnqueueMany(ctx, []*Task{NewRawTask("t", nil)}, In("q"))
		_, errFlow := b.client.EnqueueWorkflow(ctx, Chain(NewRawTask("t", nil)))
		for _, err := range []error{err, errMany, errFlow} {
			if err == nil {
				t.Fatalf("%s: a write went through", what)
			}
			for _, s := range says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: the refusal %q does not say %q", what, err, s)
				}
			}
		}
		if qi, err := b.insp.QueueInfo(ctx, "q"); err == nil && qi.Pending+qi.Scheduled > 0 {
			t.Fatalf("%s: queue q holds %d tasks after the refusals", what, qi.Pending+qi.Scheduled)
		}
	}
	refused("a prefix of 2.1", "holds 2.1", "follows 1.0")

	// a 0.1.0 worker's status has no protocol version
	b.rdb.Del(ctx, pkey)
	st, err := (&wire.WorkerStatus{Host: "old-host", PID: 42}).Encode()
	must(t, err)
	b.rdb.ZAdd(ctx, keys.Workers(b.cfg.Prefix), redis.Z{Score: float64(b.rdb.Time(ctx).Val().UnixMilli()), Member: "w-010"})
	b.rdb.HSet(ctx, keys.WorkerStatus(b.cfg.Prefix), "w-010", st)
	refused("a running 0.1.0 worker", "protocol 1.0", "w-010 (old-host, pid 42)", "shardq 0.1.0", "upgrade the workers first")
	if v := b.rdb.Get(ctx, pkey).Val(); v != "1.0" {
		t.Errorf("the prefix's version is %q, want 1.0 recorded by the first claim", v)
	}

	// the worker stopped: its status is gone
	b.rdb.HDel(ctx, keys.WorkerStatus(b.cfg.Prefix), "w-010")
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("x")), In("q")); err != nil {
		t.Fatalf("after the old worker stopped: %v", err)
	}
	b.warm(t) // script cache and depth limits: what is left is the claim
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("x")), In("q")); err != nil {
		t.Fatal(err)
	}
	if n := b.hook.roundTrips.Load(); n != 1 {
		t.Errorf("an enqueue after the claim took %d round trips, want 1: the claim is made once", n)
	}
}
