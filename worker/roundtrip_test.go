package worker

import (
	"context"
	"errors"
	"github.com/shardq/shardq/internal/outbox"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// tripHook records, for every round trip, the names of the scripts it ran
// and how many script calls it made. A pop or claim that carries acks
// counts as one call running both "pop" (or "claim") and "ack".
type tripHook struct {
	names map[string]string // SHA -> script name
	mu    sync.Mutex
	trips [][]string
	calls []int
}

func newTripHook() *tripHook {
	h := &tripHook{names: map[string]string{}}
	for _, s := range []*rcall.Script{script.Pop, script.Claim, script.Ack, script.Fail, script.Requeue, script.Forward} {
		h.names[s.Hash()] = s.Name()
	}
	return h
}

func (h *tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds)
		return next(ctx, cmds)
	}
}

func (h *tripHook) record(cmds []redis.Cmder) {
	var trip []string
	calls := 0
	for _, c := range cmds {
		if strings.ToLower(c.Name()) != "evalsha" {
			continue
		}
		args := c.Args()
		sha, _ := args[1].(string)
		name := h.names[sha]
		if name == "" {
			continue
		}
		calls++
		trip = append(trip, name)
		if numKeys, _ := args[2].(int); (name == "pop" || name == "claim") && len(args)-3-numKeys > 7 {
			trip = append(trip, "ack") // ARGV[8..]: the acks it carries
		}
	}
	if len(trip) == 0 {
		return // a handshake, a blocking move, a heartbeat...
	}
	h.mu.Lock()
	h.trips = append(h.trips, trip)
	h.calls = append(h.calls, calls)
	h.mu.Unlock()
}

// running returns how many recorded round trips ran the script named.
func (h *tripHook) running(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.trips {
		for _, s := range t {
			if s == name {
				n++
				break
			}
		}
	}
	return n
}

// count returns the recorded round trips and how many of them ran both an
// ack and a pop.
func (h *tripHook) count() (trips, carried int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.trips {
		ack, pop := false, false
		for _, n := range t {
			ack = ack || n == "ack"
			pop = pop || n == "pop"
		}
		if ack && pop {
			carried++
		}
	}
	return len(h.trips), carried
}

// unstarted returns a server for queue "q" that was never started, with
// what its fetchers and handlers need set up, so a test drives its steps
// one by one.
func unstarted(t *testing.T, b *bundle, h Handler) (*Server, *part) {
	t.Helper()
	s, err := NewServer(b.rdb, b.config(t, Config{Queues: map[string]int{"q": 1}}), h)
	if err != nil {
		t.Fatal(err)
	}
	s.outbox = outbox.New[outcome]()
	s.handlerCtx, s.cancelTasks = context.WithCancelCause(context.Background())
	return s, s.parts[0]
}

// popN pops n tasks of p and fails the test unless it gets all n.
func popN(t *testing.T, s *Server, p *part, n int) []leased {
	t.Helper()
	r, err := s.dequeue(context.Background(), p, n, 0, false)
	if err != nil || len(r.tasks) != n {
		t.Fatalf("pop: %d tasks of %d, err %v", len(r.tasks), n, err)
	}
	return r.tasks
}

// TestDequeueCarriesOutcomes shows a pop carrying the outcomes waiting in
// the outbox: one round trip writes them and leases the next tasks.
func TestDequeueCarriesOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	batch := make([]*queue.Task, 6)
	for i := range batch {
		batch[i] = queue.NewRawTask("t", []byte{byte(i)})
	}
	if _, err := b.client.EnqueueMany(ctx, batch, queue.In("q"), queue.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s, p := unstarted(t, b, HandlerFunc(func(context.Context, *Task) error { return nil }))
	first := popN(t, s, p, 3)
	for _, l := range first {
		s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck, retentionMS: time.Hour.Milliseconds()})
	}

	hook := newTripHook()
	b.rdb.AddHook(hook)
	popN(t, s, p, 3)
	if trips, carried := hook.count(); trips != 1 || carried != 1 || hook.calls[0] != 1 {
		t.Fatalf("round trips %v of %v script calls; want one call, the pop running the acks", hook.trips, hook.calls)
	}
	if n := s.outbox.Len(); n != 0 {
		t.Fatalf("%d outcomes left in the outbox", n)
	}
	for _, l := range first {
		info, err := b.insp.GetTask(ctx, "q", wire.PublicID(l.id))
		if err != nil || info.State != queue.StateSucceeded {
			t.Fatalf("task %s after the carried ack: %+v, %v", l.id, info, err)
		}
	}
}

// TestDequeueGivesBackFailedOutcomes shows outcomes a failed round trip
// could not write going back to the outbox, to be written later.
func TestDequeueGivesBackFailedOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("q")); err != nil {
		t.Fatal(err)
	}
	s, p := unstarted(t, b, HandlerFunc(func(context.Context, *Task) error { return nil }))
	l := popN(t, s, p, 1)[0]
	s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck})
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.dequeue(dead, p, 1, 0, false); err == nil {
		t.Fatal("pop with a cancelled context: no error")
	}
	if n := s.outbox.Len(); n != 1 {
		t.Fatalf("outbox holds %d outcomes after the failed round trip, want the ack back", n)
	}
	if failed, err := s.writeOnce(s.outbox.Take(maxOutcomeBatch)); err != nil || len(failed) != 0 {
		t.Fatalf("writing the given-back ack: %d failed, %v", len(failed), err)
	}
	if info, err := b.insp.QueueInfo(ctx, "q"); err != nil || info.Active != 0 {
		t.Fatalf("queue after the ack: %+v, %v", info, err)
	}
}

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
	hook := newTripHook()
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
	trips, carried := hook.count()
	trips -= hook.running("forward") // the forwarder's ticks: no tasks to move here
	t.Logf("round trips running a pop: %d, an ack: %d", hook.running("pop"), hook.running("ack"))
	t.Logf("%d tasks: %d round trips running pop, claim, ack or fail scripts; %d carried acks with a pop", n, trips, carried)
	// One round trip per task, or one per pop and one per ack, would be
	// 2,000 to 4,000; with 16 slots a batch holds up to 16 tasks.
	if trips > n/4 {
		t.Fatalf("%d round trips for %d tasks: not batched", trips, n)
	}
	// every ack rode inside its pop's own script call
	hook.mu.Lock()
	defer hook.mu.Unlock()
	for i, calls := range hook.calls {
		if calls != 1 {
			t.Fatalf("round trip %d made %d script calls (%v); want one", i, calls, hook.trips[i])
		}
	}
}

// TestTaskStartingAfterStopIsCancelled: a handler that joins the running
// registry after shutdown cancelled the others (its context is not a child
// of a shared one) still sees ErrShutdown, and its task is requeued.
func TestTaskStartingAfterStopIsCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("q")); err != nil {
		t.Fatal(err)
	}
	var seen error
	s, p := unstarted(t, b, HandlerFunc(func(ctx context.Context, _ *Task) error {
		seen = context.Cause(ctx)
		return seen
	}))
	l := popN(t, s, p, 1)[0]
	s.stopTasks(ErrShutdown) // nothing is running yet
	s.run(p, l)
	if !errors.Is(seen, ErrShutdown) {
		t.Fatalf("handler saw cause %v, want ErrShutdown", seen)
	}
	out := s.outbox.Take(maxOutcomeBatch)
	if len(out) != 1 || out[0].kind != outcomeRequeue || out[0].id != l.id {
		t.Fatalf("outcomes %+v, want the task requeued", out)
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
	hook := newTripHook()
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
	fails, forwards := hook.running("fail"), hook.running("forward")
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

// TestDequeueAcksMixedBatch: one pop carries acks of every kind at once:
// tasks kept for their retention and tasks that leave no trace, in any
// order, a unique task whose lock goes, a task with a group whose
// count goes down, and a stale token, which changes nothing.
func TestDequeueAcksMixedBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type spec struct {
		opts []queue.Option
		kept bool
	}
	specs := []spec{
		{nil, false},
		{[]queue.Option{queue.Retention(time.Hour)}, true},
		{[]queue.Option{queue.UniqueBy("u1", time.Hour)}, false},
		{[]queue.Option{queue.Group("tenant")}, false},
		{[]queue.Option{queue.Retention(time.Hour), queue.Group("tenant")}, true},
		{nil, false},
	}
	ids := make([]string, len(specs))
	for i, sp := range specs {
		info, err := b.client.Enqueue(ctx, queue.NewRawTask("t", []byte{byte(i)}), append(sp.opts, queue.In("q"))...)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	s, p := unstarted(t, b, HandlerFunc(func(context.Context, *Task) error { return nil }))
	byID := map[string]leased{}
	for _, l := range popN(t, s, p, len(specs)) {
		byID[wire.PublicID(l.id)] = l
	}
	for i, id := range ids {
		l, ok := byID[id]
		if !ok {
			t.Fatalf("task %s was not leased", id)
		}
		var retention int64
		if specs[i].kept {
			retention = time.Hour.Milliseconds()
		}
		unique := ""
		if i == 2 {
			unique = "u1"
		}
		s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck, retentionMS: retention, unique: unique})
	}
	// a stale ack: the token of a lease that is not the task's current one
	s.finish(outcome{p: p, id: byID[ids[0]].id, token: byID[ids[0]].token + 7, kind: outcomeAck})

	hook := newTripHook()
	b.rdb.AddHook(hook)
	r, err := s.dequeue(ctx, p, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(hook.calls) != 1 || hook.calls[0] != 1 {
		t.Fatalf("script calls per round trip %v, want one round trip of one call", hook.calls)
	}
	want := []int64{1, 1, 1, 1, 1, 1, 0}
	if len(r.codes) != len(want) {
		t.Fatalf("ack codes %v, want %v", r.codes, want)
	}
	for i, c := range r.codes {
		if c.(int64) != want[i] {
			t.Fatalf("ack codes %v, want %v", r.codes, want)
		}
	}
	k := p.k
	for i, id := range ids {
		info, err := b.insp.GetTask(ctx, "q", id)
		switch {
		case specs[i].kept && (err != nil || info.State != queue.StateSucceeded):
			t.Fatalf("kept task %d: %+v, %v; want done", i, info, err)
		case !specs[i].kept && (err == nil && info.State != queue.StateSucceeded):
			t.Fatalf("task %d: %+v; want it gone", i, info)
		}
		sid := wire.StoredID(id) // the form Redis holds
		inMsg := b.rdb.HExists(ctx, k.Msg(), sid).Val()
		inState := b.rdb.HExists(ctx, k.State(), sid).Val()
		if inMsg != specs[i].kept || inState != specs[i].kept {
			t.Fatalf("task %d (kept %v): message stored %v, record stored %v", i, specs[i].kept, inMsg, inState)
		}
		if b.rdb.ZScore(ctx, k.Active(), sid).Err() == nil {
			t.Fatalf("task %d still active", i)
		}
	}
	if n := b.rdb.ZCard(ctx, k.Done()).Val(); n != 2 {
		t.Fatalf("done feed holds %d tasks, want the 2 kept", n)
	}
	if n := b.rdb.Exists(ctx, k.Unique("u1")).Val(); n != 0 {
		t.Fatal("the unique task's lock outlived its ack")
	}
	if v, err := b.rdb.HGet(ctx, k.KeyActive(), "tenant").Result(); err != redis.Nil {
		t.Fatalf("tenant's running count %q, %v after both its tasks were acked", v, err)
	}
}
