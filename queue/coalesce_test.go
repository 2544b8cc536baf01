package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gateHook holds the next script call made while it is armed, before it is
// sent, until the test releases it: a call "in flight" for as long as the
// test needs.
type gateHook struct {
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newGateHook() *gateHook {
	return &gateHook{held: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "evalsha") && h.armed.CompareAndSwap(true, false) {
			h.held <- struct{}{}
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hold arms the gate and waits until a call is held.
func (h *gateHook) hold(t *testing.T, start func()) {
	t.Helper()
	h.armed.Store(true)
	start()
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no script call reached the gate within 10s")
	}
}

// result is one Enqueue call's outcome.
type result struct {
	info *TaskInfo
	err  error
}

// enqueueAsync runs Enqueue on a goroutine and returns where its outcome goes.
func enqueueAsync(ctx context.Context, c *Client, task *Task) chan result {
	out := make(chan result, 1)
	go func() {
		info, err := c.Enqueue(ctx, task)
		out <- result{info, err}
	}()
	return out
}

// waitLine waits until n calls wait in the line of queue's partition.
func waitLine(t *testing.T, c *Client, queue string, partition, n int) {
	t.Helper()
	pc := c.prepared(queue, partition)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pc.line.mu.Lock()
		got := len(pc.line.waiting)
		pc.line.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in line after 10s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// receive returns the outcome on out, failing after 10s.
func receive(t *testing.T, out chan result) result {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Enqueue did not return within 10s")
		return result{}
	}
}

// coalesceSetup is a bundle with a gate on its Redis client and queue
// "line" registered and warm (3 tasks), so single Enqueues take the plain
// path.
func coalesceSetup(t *testing.T, cfg Config) (*bundle, *gateHook) {
	t.Helper()
	b := setup(t, cfg)
	gate := newGateHook()
	b.rdb.AddHook(gate)
	for range 2 { // the capped script (which reads no MaxDepth), then the plain one
		_, err := b.client.Enqueue(context.Background(), NewRawTask("warm", nil), In("line"))
		must(t, err)
	}
	// and the batch script, which a line's call runs
	_, err := b.client.EnqueueBatch(context.Background(), []*Task{NewRawTask("warm", nil)}, In("line"))
	must(t, err)
	b.hook.reset()
	return b, gate
}

func TestEnqueueCoalescing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	task := func(i int) *Task { return NewRawTask("line", []byte(fmt.Sprint(i)), In("line")) }
	pendingOf := func(t *testing.T, b *bundle) int64 {
		qi, err := b.insp.QueueInfo(ctx, "line")
		must(t, err)
		return qi.Pending
	}

	// Ten calls that find one in flight wait for it, then go out in one
	// script call: two round trips for eleven tasks, each task stored and
	// each caller told its own ID.
	t.Run("CallsInLineShareOneRoundTrip", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		outs := []chan result{first}
		for i := 1; i <= 10; i++ {
			outs = append(outs, enqueueAsync(ctx, b.client, task(i)))
		}
		waitLine(t, b.client, "line", 0, 10)
		close(gate.release)
		var ids []string
		for _, out := range outs {
			r := receive(t, out)
			must(t, r.err)
			ids = append(ids, r.info.ID)
		}
		if s, rt := b.hook.scripts.Load(), b.hook.roundTrips.Load(); s != 2 || rt != 2 {
			t.Fatalf("%d script calls in %d round trips for a call and its line of 10, want 2 and 2", s, rt)
		}
		for i, id := range ids {
			ti, err := b.insp.GetTask(ctx, "line", id)
			must(t, err)
			if ti.State != StatePending || string(ti.Payload) != fmt.Sprint(i) {
				t.Fatalf("task %d (%s): state %s, payload %q", i, id, ti.State, ti.Payload)
			}
		}
		if slices.Sort(ids); len(slices.Compact(ids)) != 11 {
			t.Fatal("callers were told the same ID")
		}
		if n := pendingOf(t, b); n != 3+11 {
			t.Fatalf("pending %d, want 14 (3 warm-up tasks, 11)", n)
		}
	})

	// With NoCoalescing every call is its own round trip: the ten return
	// while the first is still held.
	t.Run("NoCoalescing", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{NoCoalescing: true})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		for i := 1; i <= 10; i++ {
			must(t, receive(t, enqueueAsync(ctx, b.client, task(i))).err)
		}
		close(gate.release)
		must(t, receive(t, first).err)
		if rt := b.hook.roundTrips.Load(); rt != 11 {
			t.Fatalf("%d round trips for 11 calls, want 11", rt)
		}
	})

	// A caller whose context ends while it waits in line gets the
	// context's error at once, and its task is never written; the others
	// in line are not affected.
	t.Run("CallerLeavesTheLine", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		cctx, cancel := context.WithCancel(ctx)
		left := enqueueAsync(cctx, b.client, task(1))
		waitLine(t, b.client, "line", 0, 1)
		stays := enqueueAsync(ctx, b.client, task(2))
		waitLine(t, b.client, "line", 0, 2)
		cancel()
		r := receive(t, left)
		if !errors.Is(r.err, context.Canceled) || r.info != nil {
			t.Fatalf("caller that left the line: %v, %v; want context.Canceled", r.info, r.err)
		}
		waitLine(t, b.client, "line", 0, 1)
		close(gate.release)
		must(t, receive(t, first).err)
		must(t, receive(t, stays).err)
		if n := pendingOf(t, b); n != 3+2 {
			t.Fatalf("pending %d, want 5: the task of the caller that left is not written", n)
		}
	})

	// A caller whose context ends once its batch is sent gets the
	// context's error (the outcome unknown, as for any call given up in
	// flight); the batch goes on and writes its task.
	t.Run("CallerLeavesABatchInFlight", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		left := enqueueAsync(cctx, b.client, task(1))
		waitLine(t, b.client, "line", 0, 1)
		// the batch's call is held next, once the first call is let go
		gate.hold(t, func() { gate.release <- struct{}{} })
		must(t, receive(t, first).err)
		cancel()
		r := receive(t, left)
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller that left its batch in flight: %v, want context.Canceled", r.err)
		}
		close(gate.release)
		for deadline := time.Now().Add(10 * time.Second); pendingOf(t, b) != 3+2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pending %d after 10s, want 5: the batch in flight writes its task", pendingOf(t, b))
			}
		}
	})

	// Redis gone while calls wait in line: every caller gets an error,
	// none a task info.
	t.Run("RedisGone", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		outs := []chan result{first}
		for i := 1; i <= 5; i++ {
			outs = append(outs, enqueueAsync(ctx, b.client, task(i)))
		}
		waitLine(t, b.client, "line", 0, 5)
		b.srv.Kill(t)
		close(gate.release)
		for i, out := range outs {
			r := receive(t, out)
			if r.err == nil || r.info != nil {
				t.Fatalf("call %d with Redis gone: %v, %v; want an error", i, r.info, r.err)
			}
			if !strings.Contains(r.err.Error(), `enqueue "line"`) {
				t.Fatalf("call %d: error %q does not name the queue", i, r.err)
			}
		}
	})

	// Partitions have lines of their own: a call to another partition
	// does not wait for the one in flight.
	t.Run("PartitionsDoNotWaitForEachOther", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{Partitions: map[string]int{"line": 2}})
		var first chan result
		gate.hold(t, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		r := receive(t, enqueueAsync(ctx, b.client, task(1)))
		must(t, r.err)
		close(gate.release)
		f := receive(t, first)
		must(t, f.err)
		if r.info.Partition == f.info.Partition {
			t.Fatalf("both calls went to partition %d; want round-robin over 2", r.info.Partition)
		}
	})

	// Many producers at once: every task stored once, in far fewer round
	// trips than tasks.
	t.Run("ManyProducers", func(t *testing.T) {
		t.Parallel()
		b, _ := coalesceSetup(t, Config{})
		const producers, each = 16, 100
		var wg sync.WaitGroup
		ids := make([][]string, producers)
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					info, err := b.client.Enqueue(ctx, task(p*each+i))
					if err != nil {
						t.Error(err)
						return
					}
					ids[p] = append(ids[p], info.ID)
				}
			}()
		}
		wg.Wait()
		all := slices.Concat(ids...)
		if slices.Sort(all); len(slices.Compact(all)) != producers*each {
			t.Fatalf("%d distinct IDs for %d tasks", len(all), producers*each)
		}
		if n := pendingOf(t, b); n != 3+producers*each {
			t.Fatalf("pending %d, want %d", n, 3+producers*each)
		}
		rt := b.hook.roundTrips.Load()
		t.Logf("%d tasks from %d producers in %d round trips", producers*each, producers, rt)
		if rt > producers*each/2 {
			t.Fatalf("%d round trips for %d tasks from %d producers: too few calls shared one", rt, producers*each, producers)
		}
	})
}
