package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/serve"

	"github.com/shardq/shardq/internal/inspect"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// aheadRig runs a worker of concurrency 2 on 200 quick tasks, of which
// the first holds handlers start while tasks wait ahead block in hold
// instead: once both slots hold one, the tasks leased ahead wait in the
// worker for as long as hold blocks.
type aheadRig struct {
	b           *bundle
	s           *Server
	rec         *recorder
	release     chan struct{}
	releaseOnce sync.Once
	held        atomic.Int64
	// handlers for given task IDs, run instead of the rig's (ID -> func)
	special sync.Map
	// called before each heartbeat extends its leases, when set
	beforeExtend atomic.Pointer[func()]
}

const aheadRigTasks = 200

func newAheadRig(t *testing.T, cfg Config, holds int64, hold func(ctx context.Context, release <-chan struct{}) error) *aheadRig {
	t.Helper()
	r := &aheadRig{b: setup(t), release: make(chan struct{})}
	r.rec = newRecorder(func(ctx context.Context, task *Task) error {
		if h, ok := r.special.Load(task.ID); ok {
			return h.(func(context.Context) error)(ctx)
		}
		if len(r.waiting()) == 0 || r.held.Add(1) > holds {
			return nil
		}
		return hold(ctx, r.release)
	})
	ctx := context.Background()
	tasks := make([]*queue.Task, aheadRigTasks)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("t", nil)
	}
	_, err := r.b.client.EnqueueMany(ctx, tasks)
	must(t, err)
	cfg.Concurrency = 2
	s, err := NewServer(r.b.rdb, r.b.config(t, cfg), r.rec)
	must(t, err)
	setProbe(s, &serve.ProbeFuncs{OnBeforeExtend: func() {
		if f := r.beforeExtend.Load(); f != nil {
			(*f)()
		}
	}})
	r.s = s
	must(t, s.Start(ctx))
	return r
}

// newReleasedRig is an aheadRig (lease 1s, heartbeat 100ms) whose two
// hold handlers block until free is called, or until the end of the test.
func newReleasedRig(t *testing.T) *aheadRig {
	t.Helper()
	r := newAheadRig(t, Config{Lease: time.Second, Heartbeat: 100 * time.Millisecond}, 2,
		func(ctx context.Context, release <-chan struct{}) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	t.Cleanup(func() { r.free(); _ = r.s.Shutdown(context.Background()) })
	return r
}

// free lets the blocked hold handlers return.
func (r *aheadRig) free() { r.releaseOnce.Do(func() { close(r.release) }) }

// waiting returns the IDs of the tasks leased ahead that wait for a slot.
func (r *aheadRig) waiting() []string {
	return r.s.engine.LeasedAhead()
}

// waitHeld waits until both slots hold a hold task and hold tasks wait
// ahead of them.
func (r *aheadRig) waitHeld(t *testing.T) []string {
	t.Helper()
	var ids []string
	waitFor(t, 5*time.Second, "hold tasks leased ahead", func() bool {
		ids = r.waiting()
		return len(ids) > 0 && r.s.engine.Running() == 2
	})
	return ids
}

// TestPrefetch: with quick handlers and a backlog, a pop leases tasks
// ahead of the free slots, and never more handlers run at once than the
// concurrency; every task runs once. Prefetch off, a partition with
// limits, and slow handlers lease none ahead.
func TestPrefetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(t *testing.T, cfg Config, lim *queue.Limits, tasks int, work time.Duration) (ahead int64) {
		t.Helper()
		if cfg.Concurrency == 0 {
			cfg.Concurrency = 4
		}
		b := setup(t)
		if lim != nil {
			must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, *lim))
		}
		batch := make([]*queue.Task, tasks)
		for i := range batch {
			batch[i] = queue.NewRawTask("t", nil)
		}
		_, err := b.client.EnqueueMany(ctx, batch)
		must(t, err)
		var running, peak atomic.Int64
		rec := newRecorder(func(context.Context, *Task) error {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(work)
			running.Add(-1)
			return nil
		})
		s, err := NewServer(b.rdb, b.config(t, cfg), rec)
		must(t, err)
		var leased atomic.Int64
		setProbe(s, &serve.ProbeFuncs{OnLeasedAhead: func(n int) { leased.Add(int64(n)) }})
		must(t, s.Start(ctx))
		t.Cleanup(func() { _ = s.Shutdown(ctx) })
		waitFor(t, 20*time.Second, "every task", func() bool { return rec.total() >= tasks })
		waitFor(t, 5*time.Second, "the last acks", func() bool {
			qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
			return err == nil && qi.Active == 0 && qi.Pending == 0
		})
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.runs) != tasks || len(rec.tasks) != tasks {
			t.Fatalf("%d runs of %d distinct tasks, want %d of %d", len(rec.tasks), len(rec.runs), tasks, tasks)
		}
		if p := peak.Load(); p > int64(cfg.Concurrency) {
			t.Fatalf("%d handlers ran at once, concurrency %d", p, cfg.Concurrency)
		}
		return leased.Load()
	}
	t.Run("QuickHandlersLeaseAhead", func(t *testing.T) {
		t.Parallel()
		if n := run(t, Config{}, nil, 2000, 0); n == 0 {
			t.Fatal("2,000 quick tasks and no pop leased any ahead of the free slots")
		}
	})
	t.Run("OneSlot", func(t *testing.T) {
		t.Parallel()
		if n := run(t, Config{Concurrency: 1}, nil, 2000, 0); n == 0 {
			t.Fatal("a worker of one slot leased no quick task ahead")
		}
	})
	t.Run("Off", func(t *testing.T) {
		t.Parallel()
		if n := run(t, Config{Prefetch: -1}, nil, 2000, 0); n != 0 {
			t.Fatalf("Prefetch -1 leased %d tasks ahead", n)
		}
	})
	t.Run("NotUnderLimits", func(t *testing.T) {
		t.Parallel()
		// a limit that never binds: a task leased ahead would still hold its room
		if n := run(t, Config{}, &queue.Limits{Concurrency: 1000}, 2000, 0); n != 0 {
			t.Fatalf("a partition with limits had %d tasks leased ahead", n)
		}
	})
	t.Run("NotUnderStrictPriority", func(t *testing.T) {
		t.Parallel()
		if n := run(t, Config{StrictPriority: true}, nil, 2000, 0); n != 0 {
			t.Fatalf("strict priority leased %d tasks ahead", n)
		}
	})
	t.Run("NotForSlowHandlers", func(t *testing.T) {
		t.Parallel()
		// 4 handlers of 10ms start one task per 2.5ms: none within prefetchWait
		if n := run(t, Config{}, nil, 200, 10*time.Millisecond); n != 0 {
			t.Fatalf("10ms handlers had %d tasks leased ahead", n)
		}
	})
}

// TestShutdownGivesBackTasksLeasedAhead: tasks leased ahead and never
// started go back to their queue at Shutdown, at once (not after their
// lease) and without costing an attempt; a new worker runs each once.
func TestShutdownGivesBackTasksLeasedAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newAheadRig(t, Config{ShutdownTimeout: 100 * time.Millisecond}, 2,
		func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return ctx.Err() })
	waiting := r.waitHeld(t)
	must(t, r.s.Shutdown(ctx))
	qi, err := r.b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Active != 0 {
		t.Fatalf("%d tasks still active after Shutdown: the tasks leased ahead were not given back", qi.Active)
	}
	for _, id := range waiting {
		ti, err := r.b.insp.GetTask(ctx, queue.DefaultQueue, id)
		must(t, err)
		if ti.State != queue.StatePending || ti.Attempts != 0 {
			t.Fatalf("task %s leased ahead: %s with %d attempts after Shutdown, want pending with 0", id, ti.State, ti.Attempts)
		}
		if n := r.rec.count(id); n != 0 {
			t.Fatalf("task %s leased ahead ran %d times before Shutdown", id, n)
		}
	}
	// a new worker runs the rest, each once, as its first attempt: the
	// tasks waiting ahead and the two whose handlers Shutdown cancelled
	left := int(qi.Pending)
	if left < len(waiting)+2 {
		t.Fatalf("%d tasks pending after Shutdown, want at least the %d waiting ahead and the 2 cancelled", left, len(waiting))
	}
	rec := newRecorder(nil)
	r.b.server(t, Config{Concurrency: 2}, rec)
	waitFor(t, 5*time.Second, "the tasks left", func() bool { return rec.total() >= left })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, task := range rec.tasks {
		if task.Attempt != 1 || rec.runs[task.ID] != 1 {
			t.Fatalf("task %s ran %d times after the restart, as attempt %d; want once, as attempt 1", task.ID, rec.runs[task.ID], task.Attempt)
		}
	}
	for _, id := range waiting {
		if rec.runs[id] != 1 {
			t.Fatalf("task %s, given back from ahead, ran %d times after the restart, want 1", id, rec.runs[id])
		}
	}
	// every task ran to its end once over the two workers
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	if ran := len(r.rec.tasks) - 2 + len(rec.tasks); ran != aheadRigTasks {
		t.Fatalf("%d tasks ran to their end, want %d", ran, aheadRigTasks)
	}
}

// TestLeasesAheadAreExtended: a task that waits ahead longer than the
// lease keeps it (the heartbeat extends it with the running ones), so the
// reaper does not hand it out again: every task runs once, as its first
// attempt.
func TestLeasesAheadAreExtended(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var lost atomic.Int64
	cfg := Config{Lease: 300 * time.Millisecond, Heartbeat: 60 * time.Millisecond}
	cfg.Observer = lostCounter{&lost}
	r := newAheadRig(t, cfg, 4, func(ctx context.Context, _ <-chan struct{}) error {
		time.Sleep(700 * time.Millisecond) // more than two leases
		return nil
	})
	t.Cleanup(func() { _ = r.s.Shutdown(ctx) })
	r.waitHeld(t)
	waitFor(t, 10*time.Second, "every task", func() bool { return r.rec.total() >= aheadRigTasks })
	waitFor(t, 5*time.Second, "the last acks", func() bool {
		qi, err := r.b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Active == 0 && qi.Pending == 0
	})
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, task := range r.rec.tasks {
		if task.Attempt != 1 || r.rec.runs[task.ID] != 1 {
			t.Fatalf("task %s: attempt %d, ran %d times; want once, as attempt 1", task.ID, task.Attempt, r.rec.runs[task.ID])
		}
	}
	if len(r.rec.tasks) != aheadRigTasks {
		t.Fatalf("%d runs, want %d", len(r.rec.tasks), aheadRigTasks)
	}
	if n := lost.Load(); n != 0 {
		t.Fatalf("%d leases lost", n)
	}
}

// lostCounter is an Observer that counts lost leases.
type lostCounter struct{ n *atomic.Int64 }

func (lostCounter) HandlerStarted(string, string) {}
func (lostCounter) HandlerFinished(HandlerEvent)  {}
func (c lostCounter) LeaseLost(string)            { c.n.Add(1) }
func (lostCounter) RedisError(string)             {}

// TestCancelTaskLeasedAhead: an operator's cancel of a task waiting ahead
// makes it dead, as cancelled, without running it.
func TestCancelTaskLeasedAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReleasedRig(t)
	waiting := r.waitHeld(t)
	id := waiting[len(waiting)-1]
	must(t, r.b.insp.CancelTask(ctx, queue.DefaultQueue, id))
	waitFor(t, 3*time.Second, "the cancelled task dead", func() bool {
		ti, err := r.b.insp.GetTask(ctx, queue.DefaultQueue, id)
		return err == nil && ti.State == queue.StateDead && strings.Contains(ti.LastError, "cancelled by an operator")
	})
	r.free()
	waitFor(t, 10*time.Second, "the other tasks", func() bool { return r.rec.total() >= aheadRigTasks-1 })
	if n := r.rec.count(id); n != 0 {
		t.Fatalf("the task cancelled while it waited ahead ran %d times", n)
	}
}

// TestCancelTaskStartedFromAhead: a task an operator cancels while it
// waits ahead, which starts between the heartbeat's look at the tasks
// ahead and the answer that it was cancelled, has its running handler
// cancelled, as any running task's.
func TestCancelTaskStartedFromAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReleasedRig(t)
	waiting := r.waitHeld(t)
	id := waiting[0] // the first to start when a slot frees
	causes := make(chan error, 1)
	r.special.Store(id, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-time.After(3 * time.Second):
			causes <- nil // not cancelled
		}
		return ctx.Err()
	})
	must(t, r.b.insp.CancelTask(ctx, queue.DefaultQueue, id))
	// after the heartbeat took its list, free the slots: the task starts
	// before the answer that its cancel was asked for comes back
	hook := func() {
		r.free()
		for deadline := time.Now().Add(2 * time.Second); r.rec.count(id) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	r.beforeExtend.Store(&hook)
	select {
	case c := <-causes:
		if !errors.Is(c, ErrCancelled) {
			t.Fatalf("the handler of the task cancelled while it waited ahead ended with cause %v, want ErrCancelled", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the task cancelled while it waited ahead never started")
	}
}

// TestLeasedStateIsAHashTable: a lease's record is long enough that Redis
// keeps T:state a hash table, not a listpack whose every lookup is a scan
// (see include/record.lua), even for a worker with a one-letter ID; an
// acked task's record is deleted all the same.
func TestLeasedStateIsAHashTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	b.server(t, Config{WorkerID: "w", Concurrency: 1}, HandlerFunc(func(context.Context, *Task) error {
		started <- struct{}{}
		<-release
		return nil
	}))
	info := b.enqueue(t, queue.NewRawTask("t", nil))
	<-started
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	enc, err := b.rdb.ObjectEncoding(ctx, k.State()).Result()
	must(t, err)
	raw, err := b.rdb.HGet(ctx, k.State(), wire.StoredID(info.ID)).Result()
	must(t, err)
	close(release)
	if enc != "hashtable" {
		t.Fatalf("T:state with one lease (a record of %d bytes) is a %s, want a hashtable", len(raw), enc)
	}
	r, err := wire.DecodeRecord([]byte(raw))
	must(t, err)
	if r.State != "active" || r.Worker != "w" || r.Attempts != 1 || r.Token != 1 {
		t.Fatalf("the padded record decodes as %+v", r)
	}
	waitFor(t, 3*time.Second, "the ack", func() bool {
		return b.rdb.Exists(ctx, k.State()).Val() == 0
	})
}

// TestActiveSetIsASkiplist: the lease that makes a partition's active set
// makes it a skiplist, not a listpack that every lease and ack would scan
// (see include/lease.lua's active_add), and holds the leased tasks alone;
// the last ack deletes it, and the next lease makes it again.
func TestActiveSetIsASkiplist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	started, release := make(chan string, 1), make(chan struct{})
	b.server(t, Config{Concurrency: 1}, HandlerFunc(func(_ context.Context, task *Task) error {
		started <- task.ID
		<-release
		return nil
	}))
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	for round := range 2 {
		info := b.enqueue(t, queue.NewRawTask("t", nil))
		if id := <-started; id != info.ID {
			t.Fatalf("round %d: task %s started, want %s", round, id, info.ID)
		}
		enc, err := b.rdb.ObjectEncoding(ctx, k.Active()).Result()
		must(t, err)
		members, err := b.rdb.ZRange(ctx, k.Active(), 0, -1).Result()
		must(t, err)
		release <- struct{}{}
		if enc != "skiplist" {
			t.Fatalf("round %d: T:active with one lease is a %s, want a skiplist", round, enc)
		}
		if len(members) != 1 || members[0] != wire.StoredID(info.ID) {
			t.Fatalf("round %d: T:active holds %q, want the leased task %s alone", round, members, info.ID)
		}
		waitFor(t, 3*time.Second, "the ack", func() bool {
			return b.rdb.Exists(ctx, k.Active()).Val() == 0
		})
	}
}

// TestTasksLeasedAheadAreShownApart: tasks a worker holds ahead are active
// in Redis but not running, and the inspector says so: Workers counts
// them as Ahead, not Busy (which stays at most the concurrency), the
// worker's status per queue reports them, and Scaling counts them with
// the backlog, not as running.
func TestTasksLeasedAheadAreShownApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReleasedRig(t)
	waiting := r.waitHeld(t)
	var w *queue.WorkerInfo
	waitFor(t, 5*time.Second, "a heartbeat that reports the tasks held ahead", func() bool {
		ws, err := r.b.insp.Workers(ctx)
		if err != nil || len(ws) != 1 {
			return false
		}
		w = ws[0]
		return w.Work[queue.DefaultQueue].Ahead == len(waiting) && w.Work[queue.DefaultQueue].Running == 2
	})
	if w.Busy != 2 || w.Ahead != len(waiting) || len(w.Tasks) != 2+len(waiting) {
		t.Fatalf("worker with 2 slots and %d tasks held ahead: busy %d, ahead %d, %d tasks leased", len(waiting), w.Busy, w.Ahead, len(w.Tasks))
	}
	// the dashboard's workers page and API, over the same inspector
	// httptest.NewRequest names the host example.com
	dash, err := dashboard.New(r.b.insp, dashboard.Options{Unauthenticated: true, AllowedHosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewRecorder()
	dash.ServeHTTP(page, httptest.NewRequest("GET", "/workers", nil))
	if body := page.Body.String(); page.Code != 200 || !strings.Contains(body, "2 / 2") ||
		!strings.Contains(body, fmt.Sprintf("+ %d tasks ahead", len(waiting))) {
		t.Fatalf("workers page (%d) does not show 2 of 2 slots busy and %d tasks ahead", page.Code, len(waiting))
	}
	t.Logf("%d tasks leased, %d of them held ahead", len(w.Tasks), w.Ahead)
	// it lists the first 10 leased tasks, and counts the rest
	if body, more := page.Body.String(), len(w.Tasks)-10; strings.Count(body, "/queues/default/tasks/") != min(len(w.Tasks), 10) ||
		(more > 0) != strings.Contains(body, fmt.Sprintf("and %d more", more)) {
		t.Fatalf("workers page lists %d task links for %d leased tasks; want at most 10 and the rest counted",
			strings.Count(body, "/queues/default/tasks/"), len(w.Tasks))
	}
	api := httptest.NewRecorder()
	dash.ServeHTTP(api, httptest.NewRequest("GET", "/api/workers", nil))
	var listed struct {
		Workers []struct {
			Busy  int `json:"busy"`
			Ahead int `json:"ahead"`
			Work  map[string]struct {
				Ahead int `json:"ahead"`
			} `json:"work"`
		} `json:"workers"`
	}
	if err := json.Unmarshal(api.Body.Bytes(), &listed); err != nil || len(listed.Workers) != 1 ||
		listed.Workers[0].Busy != 2 || listed.Workers[0].Ahead != len(waiting) || listed.Workers[0].Work[queue.DefaultQueue].Ahead != len(waiting) {
		t.Fatalf("/api/workers: %s (%v)", api.Body.String()[:min(api.Body.Len(), 300)], err)
	}

	live, err := inspect.LiveWork(ctx, r.b.insp)
	must(t, err)
	if lw := live[queue.DefaultQueue]; lw.Workers != 1 || lw.Running != 2 || lw.Ahead != len(waiting) {
		t.Fatalf("live work = %+v; want 1 worker, 2 running, %d held ahead", lw, len(waiting))
	}
	qi, err := r.b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	sc, err := r.b.insp.Scaling(ctx, queue.ScalingQuery{Queue: queue.DefaultQueue})
	must(t, err)
	if qi.Active != int64(2+len(waiting)) || sc.Running != 2 || sc.Backlog != qi.Pending+int64(len(waiting)) {
		t.Fatalf("active %d, pending %d, %d held ahead: scaling says running %d, backlog %d; want 2 and pending + held ahead",
			qi.Active, qi.Pending, len(waiting), sc.Running, sc.Backlog)
	}
}
