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

// gateHook holds the next script calls made while it is armed, before
// they are sent, until the test releases them (one per value sent on
// release, or all when it is closed): calls "in flight" for as long as the
// test needs.
type gateHook struct {
	armed   atomic.Int32 // how many calls to hold yet
	held    chan struct{}
	release chan struct{}
	// released gets, for each held call let go, its context's error then
	released chan error
	// callers lists, per script call, its context's callerKey value
	mu      sync.Mutex
	callers []any
}

// callerKey is a context value a test gives its callers, as a tracer
// gives its span.
type callerKey struct{}

func newGateHook() *gateHook {
	return &gateHook{held: make(chan struct{}, 64), release: make(chan struct{}), released: make(chan error, 64)}
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "evalsha") {
			h.mu.Lock()
			h.callers = append(h.callers, ctx.Value(callerKey{}))
			h.mu.Unlock()
		}
		if strings.EqualFold(cmd.Name(), "evalsha") && h.armed.Add(-1) >= 0 {
			h.held <- struct{}{}
			<-h.release
			h.released <- ctx.Err()
		}
		return next(ctx, cmd)
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hold arms the gate for n calls, runs start, and waits until n are held.
func (h *gateHook) hold(t *testing.T, n int, start func()) {
	t.Helper()
	h.armed.Store(int32(n))
	start()
	for range n {
		select {
		case <-h.held:
		case <-time.After(10 * time.Second):
			t.Fatal("script calls did not reach the gate within 10s")
		}
	}
}

// fill starts lineDepth Enqueues of tasks made by task and holds them at
// the gate: on a queue of one partition, the next call waits in line.
func (h *gateHook) fill(t *testing.T, c *Client, task func(int) *Task) []chan result {
	t.Helper()
	var outs []chan result
	h.hold(t, int(c.lineDepth), func() {
		for i := range int(c.lineDepth) {
			outs = append(outs, enqueueAsync(context.Background(), c, task(-1-i)))
		}
	})
	return outs
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
		got := pc.line.Waiting()
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
	_, err := b.client.EnqueueMany(context.Background(), []*Task{NewRawTask("warm", nil)}, In("line"))
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

	// Ten calls that find lineDepth in flight wait for them, then go out
	// in one script call: lineDepth+1 round trips for lineDepth+10 tasks,
	// each task stored and each caller told its own ID.
	t.Run("CallsInLineShareOneRoundTrip", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		outs := gate.fill(t, b.client, task)
		depth := len(outs)
		for i := 1; i <= 10; i++ {
			outs = append(outs, enqueueAsync(ctx, b.client, task(i)))
		}
		waitLine(t, b.client, "line", 0, 10)
		close(gate.release)
		ids := map[string]string{}
		for i, out := range outs {
			r := receive(t, out)
			must(t, r.err)
			ids[r.info.ID] = fmt.Sprint(i - depth + 1)
			if i < depth {
				ids[r.info.ID] = fmt.Sprint(-1 - i)
			}
		}
		if s, rt := b.hook.scripts.Load(), b.hook.roundTrips.Load(); s != int64(depth+1) || rt != int64(depth+1) {
			t.Fatalf("%d script calls in %d round trips for %d calls in flight and a line of 10, want %d and %d", s, rt, depth, depth+1, depth+1)
		}
		if len(ids) != depth+10 {
			t.Fatalf("callers were told %d distinct IDs for %d tasks", len(ids), depth+10)
		}
		for id, payload := range ids {
			ti, err := b.insp.GetTask(ctx, "line", id)
			must(t, err)
			if ti.State != StatePending || string(ti.Payload) != payload {
				t.Fatalf("task %s: state %s, payload %q, want pending, %q", id, ti.State, ti.Payload, payload)
			}
		}
		if n := pendingOf(t, b); n != int64(3+depth+10) {
			t.Fatalf("pending %d, want %d (3 warm-up tasks)", n, 3+depth+10)
		}
	})

	// With NoCoalescing every call is its own round trip: the ten return
	// while the first ones are still held.
	t.Run("NoCoalescing", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{NoCoalescing: true})
		held := gate.fill(t, b.client, task)
		for i := 1; i <= 10; i++ {
			must(t, receive(t, enqueueAsync(ctx, b.client, task(i))).err)
		}
		close(gate.release)
		for _, out := range held {
			must(t, receive(t, out).err)
		}
		if rt, want := b.hook.roundTrips.Load(), int64(len(held)+10); rt != want {
			t.Fatalf("%d round trips for %d calls, want %d", rt, want, want)
		}
	})

	// A caller whose context ends while it waits in line gets the
	// context's error at once, and its task is never written; the others
	// in line are not affected.
	t.Run("CallerLeavesTheLine", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		held := gate.fill(t, b.client, task)
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
		for _, out := range held {
			must(t, receive(t, out).err)
		}
		must(t, receive(t, stays).err)
		if n, want := pendingOf(t, b), int64(3+len(held)+1); n != want {
			t.Fatalf("pending %d, want %d: the task of the caller that left is not written", n, want)
		}
	})

	// A caller whose context ends once its batch is sent gets the
	// context's error (the outcome unknown, as for any call given up in
	// flight); the batch goes on for the caller still in it, and writes
	// both tasks.
	t.Run("CallerLeavesABatchInFlight", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		held := gate.fill(t, b.client, task)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		left := enqueueAsync(cctx, b.client, task(1))
		waitLine(t, b.client, "line", 0, 1)
		stays := enqueueAsync(ctx, b.client, task(2))
		waitLine(t, b.client, "line", 0, 2)
		// the batch's call is held next, once one held call is let go
		gate.hold(t, 1, func() { gate.release <- struct{}{} })
		cancel()
		r := receive(t, left)
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller that left its batch in flight: %v, want context.Canceled", r.err)
		}
		close(gate.release)
		for _, out := range held {
			must(t, receive(t, out).err)
		}
		must(t, receive(t, stays).err)
		for range len(held) + 1 {
			if err := <-gate.released; err != nil {
				t.Fatalf("a call went on with its context ended: %v", err)
			}
		}
		if n, want := pendingOf(t, b), int64(3+len(held)+2); n != want {
			t.Fatalf("pending %d, want %d: the batch in flight writes both tasks", n, want)
		}
	})

	// A batch's call carries its first caller's context values (a go-redis
	// tracing hook finds that caller's span there, its parent), not the
	// others'.
	t.Run("ABatchCarriesItsFirstCallersValues", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		held := gate.fill(t, b.client, task)
		var lined []chan result
		for i, name := range []string{"first", "second", "third"} {
			lined = append(lined, enqueueAsync(context.WithValue(ctx, callerKey{}, name), b.client, task(i+1)))
			waitLine(t, b.client, "line", 0, i+1)
		}
		close(gate.release)
		for _, out := range append(held, lined...) {
			must(t, receive(t, out).err)
		}
		gate.mu.Lock()
		defer gate.mu.Unlock()
		var named []any
		for _, v := range gate.callers {
			if v != nil {
				named = append(named, v)
			}
		}
		if len(named) != 1 || named[0] != "first" || b.hook.scripts.Load() != int64(len(held)+1) {
			t.Fatalf("script calls carried caller values %v in %d calls; want one batch call carrying \"first\"", named, b.hook.scripts.Load())
		}
	})

	// Once every caller of a batch has left, its call's context ends: a
	// batch is bounded by its callers' contexts, as a single call is.
	t.Run("EveryCallerLeavesABatch", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		held := gate.fill(t, b.client, task)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		left := enqueueAsync(cctx, b.client, task(1))
		waitLine(t, b.client, "line", 0, 1)
		gate.hold(t, 1, func() { gate.release <- struct{}{} })
		if err := <-gate.released; err != nil {
			t.Fatalf("the held call let go had its context ended: %v", err)
		}
		cancel()
		if r := receive(t, left); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the batch's only caller left: %v, want context.Canceled", r.err)
		}
		close(gate.release) // the batch's call, and the direct calls still held
		for _, out := range held {
			must(t, receive(t, out).err)
		}
		ended := 0
		for range len(held) {
			if err := <-gate.released; errors.Is(err, context.Canceled) {
				ended++
			}
		}
		if ended != 1 {
			t.Fatalf("%d calls went on with their context ended, want 1: the batch every caller left", ended)
		}
	})

	// Redis gone while calls wait in line: every caller gets an error,
	// none a task info.
	t.Run("RedisGone", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{})
		outs := gate.fill(t, b.client, task)
		for i := 1; i <= 5; i++ {
			outs = append(outs, enqueueAsync(ctx, b.client, task(i)))
		}
		waitLine(t, b.client, "line", 0, 5)
		b.srv.KillHoldingPort(t) // no other test's server answers on its port
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
	// does not wait for the one in flight (here, with a line that forms
	// behind a single call).
	t.Run("PartitionsDoNotWaitForEachOther", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{Partitions: map[string]int{"line": 2}})
		b.client.lineDepth = 1
		var first chan result
		gate.hold(t, 1, func() { first = enqueueAsync(ctx, b.client, task(0)) })
		r := receive(t, enqueueAsync(ctx, b.client, task(1)))
		must(t, r.err)
		close(gate.release)
		f := receive(t, first)
		must(t, f.err)
		if r.info.Partition == f.info.Partition {
			t.Fatalf("both calls went to partition %d; want round-robin over 2", r.info.Partition)
		}
	})

	// The depth counts a client's calls in all partitions: once lineDepth
	// are in flight, a call to a partition with one of them waits in its
	// line, and the lines go out one batch per partition. lineDepth held
	// calls over 3 partitions (round-robin, so each has some), then 9
	// calls, 3 per line: lineDepth + 3 round trips.
	t.Run("LinesOfManyPartitions", func(t *testing.T) {
		t.Parallel()
		b, gate := coalesceSetup(t, Config{Partitions: map[string]int{"line": 3}})
		held := gate.fill(t, b.client, task)
		var outs []chan result
		for i := 1; i <= 9; i++ {
			outs = append(outs, enqueueAsync(ctx, b.client, task(i)))
		}
		for p := range 3 {
			waitLine(t, b.client, "line", p, 3)
		}
		close(gate.release)
		per := map[int]int{}
		for _, out := range append(held, outs...) {
			r := receive(t, out)
			must(t, r.err)
			per[r.info.Partition]++
		}
		depth := len(held)
		if rt := b.hook.roundTrips.Load(); rt != int64(depth+3) {
			t.Fatalf("%d round trips for %d calls in flight and 3 lines, want %d", rt, depth, depth+3)
		}
		if n := per[0] + per[1] + per[2]; n != depth+9 || min(per[0], per[1], per[2]) != n/3 {
			t.Fatalf("tasks per partition %v, want %d round-robin", per, depth+9)
		}
	})

	// Many producers at once: every task stored once, in far fewer round
	// trips than tasks.
	t.Run("ManyProducers", func(t *testing.T) {
		t.Parallel()
		b, _ := coalesceSetup(t, Config{})
		const producers, each = 64, 25
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
