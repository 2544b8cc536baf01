package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/tripcount"
	"github.com/shardq/shardq/queue"
)

// TestBusyWorkerRoundTrips counts the round trips a busy worker makes:
// pops and acks go in batches, one round trip for many tasks, and each
// round trip is one script call. Whether a given ack rides with a pop or
// goes with the flusher depends on scheduling, so it is not counted here:
// TestDequeueCarriesOutcomes shows a ready ack riding with the next pop.
func TestBusyWorkerRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 2000
	batch := make([]*queue.Task, n)
	for i := range batch {
		batch[i] = queue.NewRawTask("t", nil)
	}
	if _, err := b.client.EnqueueMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	hook := tripcount.New()
	b.rdb.AddHook(hook)
	var done atomic.Int64
	b.server(t, Config{Concurrency: 16}, HandlerFunc(func(context.Context, *Task) error {
		done.Add(1)
		return nil
	}))
	waitFor(t, 30*time.Second, "all tasks acked", func() bool {
		info, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && done.Load() == n && info.Pending == 0 && info.Active == 0
	})
	trips, carried := hook.Count()
	trips -= hook.Running("forward") // the forwarder's ticks: no tasks to move here
	t.Logf("round trips running a pop: %d, an ack: %d", hook.Running("pop"), hook.Running("ack"))
	t.Logf("%d tasks: %d round trips running pop, claim, ack or fail scripts; %d carried acks with a pop", n, trips, carried)
	// One round trip per task, or one per pop and one per ack, would be
	// 2,000 to 4,000; with 16 slots a batch holds up to 16 tasks.
	if trips > n/4 {
		t.Fatalf("%d round trips for %d tasks: not batched", trips, n)
	}
	// every ack rode inside its pop's own script call
	names := hook.Trips()
	for i, calls := range hook.Calls() {
		if calls != 1 {
			t.Fatalf("round trip %d made %d script calls (%v); want one", i, calls, names[i])
		}
	}
}

// TestFailingWorkerRoundTrips counts the round trips of a busy worker whose
// every task fails once: failures are written in batches, and the forwarder
// brings the retries back with one call per tick, not one per task.
func TestFailingWorkerRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 1000
	batch := make([]*queue.Task, n)
	for i := range batch {
		batch[i] = queue.NewRawTask("t", nil)
	}
	if _, err := b.client.EnqueueMany(ctx, batch, queue.MaxRetry(1)); err != nil {
		t.Fatal(err)
	}
	hook := tripcount.New()
	b.rdb.AddHook(hook)
	var ok atomic.Int64
	b.server(t, Config{Concurrency: 16, RetryDelay: func(int, error, *Task) time.Duration { return 0 }},
		HandlerFunc(func(_ context.Context, t *Task) error {
			if t.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			ok.Add(1)
			return nil
		}))
	waitFor(t, 30*time.Second, "every task failed once, then succeeded", func() bool {
		info, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && ok.Load() == n && info.Pending == 0 && info.Active == 0 && info.Retry == 0
	})
	fails, forwards := hook.Running("fail"), hook.Running("forward")
	t.Logf("%d tasks failed once: %d round trips wrote failures, %d forwarder calls", n, fails, forwards)
	if fails > n/4 {
		t.Fatalf("%d round trips wrote %d failures: not batched", fails, n)
	}
	// the forwarder runs every ForwardInterval (500ms): a few ticks, each one call
	if forwards > 100 {
		t.Fatalf("%d forwarder calls for %d retries", forwards, n)
	}
}

// TestStatsCountersExpire: the per-minute history counters an ack writes
// count every task and carry their expiry (set once, when created).
func TestStatsCountersExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var done atomic.Int64
	b.server(t, Config{}, HandlerFunc(func(context.Context, *Task) error { done.Add(1); return nil }))
	for i := range 3 {
		if _, err := b.client.Enqueue(ctx, queue.NewRawTask("t", nil)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "task acked", func() bool {
			info, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
			return err == nil && done.Load() == int64(i+1) && info.Active == 0
		})
	}
	keys, err := b.rdb.Keys(ctx, "*"+b.qcfg.Prefix+"*:stats:done:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("stats keys %v, %v", keys, err)
	}
	total := 0
	for _, k := range keys {
		n, _ := b.rdb.Get(ctx, k).Int()
		if strings.HasSuffix(k, ":total") { // the monotonic counter: kept for good
			if n != 3 || b.rdb.TTL(ctx, k).Val() != -1 {
				t.Fatalf("%s = %d, TTL %v; want 3, no expiry", k, n, b.rdb.TTL(ctx, k).Val())
			}
			continue
		}
		total += n
		if ttl := b.rdb.TTL(ctx, k).Val(); ttl < 7*24*time.Hour {
			t.Fatalf("%s has TTL %v, want about 8 days", k, ttl)
		}
	}
	if total != 3 {
		t.Fatalf("counters sum to %d, want 3", total)
	}
}
