package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

func TestScheduling(t *testing.T) {
	t.Parallel()

	// A task due in 6s starts then, not on the next coarse tick at 8s:
	// the forwarder's look at 4s sees it and sleeps until its due time.
	// The two outcomes are 2s apart, so a loaded machine's delays do not
	// blur them.
	t.Run("DelayedTaskStartsOnTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started := make(chan time.Time, 1)
		b.server(t, Config{ForwardInterval: 4 * time.Second}, HandlerFunc(func(ctx context.Context, task *Task) error {
			started <- time.Now()
			return nil
		}))
		sent := time.Now()
		b.enqueue(t, queue.NewRawTask("later", nil), queue.ProcessIn(6*time.Second))
		select {
		case at := <-started:
			if d := at.Sub(sent); d < 6*time.Second-50*time.Millisecond || d > 7*time.Second {
				t.Fatalf("delayed task started after %v, want 6s, not at the forwarder's next tick, 8s", d)
			}
		case <-time.After(time.Minute):
			t.Fatal("delayed task never started")
		}
	})

	t.Run("ProcessAtInThePast", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := newRecorder(nil)
		b.server(t, Config{}, rec)
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.ProcessAt(time.Now().Add(-time.Minute)))
		waitFor(t, 3*time.Second, "run", func() bool { return rec.count(info.ID) == 1 })
	})
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	rec := newRecorder(nil)
	b.server(t, Config{}, rec) // registers the queue: pausing an unknown one is refused
	b.server(t, Config{}, rec) // every worker honours it
	must(t, b.insp.Pause(ctx, queue.DefaultQueue))
	for range 5 {
		b.enqueue(t, queue.NewRawTask("t", nil))
	}
	time.Sleep(700 * time.Millisecond)
	if n := rec.total(); n != 0 {
		t.Fatalf("%d tasks ran on a paused queue", n)
	}
	qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	if !qi.Paused || qi.Pending != 5 {
		t.Fatalf("QueueInfo = %+v", qi)
	}
	must(t, b.insp.Resume(ctx, queue.DefaultQueue))
	waitFor(t, 3*time.Second, "all five after resume", func() bool { return rec.total() == 5 })
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("WaitsForRunningHandlers", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started := make(chan struct{})
		var done atomic.Bool
		var logs syncBuffer
		cfg := Config{ShutdownTimeout: 5 * time.Second}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s, err := NewServer(b.rdb, b.config(t, cfg),
			HandlerFunc(func(ctx context.Context, task *Task) error {
				close(started)
				time.Sleep(300 * time.Millisecond)
				done.Store(true)
				return nil
			}))
		must(t, err)
		must(t, s.Start(ctx))
		info := b.enqueue(t, queue.NewRawTask("t", nil))
		<-started
		must(t, s.Shutdown(ctx))
		if !done.Load() {
			t.Fatal("Shutdown returned before the running handler finished")
		}
		if _, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("task after graceful shutdown: %v; want acked", err)
		}
		// Shutdown drains the outcomes still queued; none is written twice.
		if bytes.Contains(logs.Bytes(), []byte("stale")) {
			t.Fatalf("a clean run logged a stale outcome:\n%s", logs.Bytes())
		}
		if err := s.Shutdown(ctx); !errors.Is(err, ErrInvalid) {
			t.Fatalf("second Shutdown: %v", err)
		}
		if n := b.rdb.ZCard(ctx, keys.Workers(b.qcfg.Prefix)).Val(); n != 0 {
			t.Fatalf("%d workers still registered after shutdown", n)
		}
	})

	// A handler still running at the timeout is cancelled with ErrShutdown
	// and its task goes back to the head of the queue, its attempt not counted.
	t.Run("TimeoutRequeuesWithoutCostingAnAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started := make(chan struct{}, 1)
		causes := make(chan error, 1)
		// Concurrency 1: the task enqueued next stays pending meanwhile.
		s, err := NewServer(b.rdb, b.config(t, Config{ShutdownTimeout: 200 * time.Millisecond, Concurrency: 1}),
			HandlerFunc(func(ctx context.Context, task *Task) error {
				started <- struct{}{}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}))
		must(t, err)
		must(t, s.Start(ctx))
		first := b.enqueue(t, queue.NewRawTask("slow", nil))
		<-started
		second := b.enqueue(t, queue.NewRawTask("next", nil))
		must(t, s.Shutdown(ctx))
		if c := <-causes; !errors.Is(c, ErrShutdown) {
			t.Fatalf("handler context cause %v, want ErrShutdown", c)
		}
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, first.ID)
		must(t, err)
		if ti.State != queue.StatePending || ti.Attempts != 0 {
			t.Fatalf("requeued task: state %s attempts %d; want pending with 0", ti.State, ti.Attempts)
		}
		// back at the head: it runs before the task enqueued after it
		rec := newRecorder(nil)
		b.server(t, Config{Concurrency: 1}, rec)
		waitFor(t, 3*time.Second, "both tasks", func() bool { return rec.total() == 2 })
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.tasks[0].ID != first.ID || rec.tasks[0].Attempt != 1 || rec.tasks[1].ID != second.ID {
			t.Fatalf("order after requeue: %s (attempt %d), %s", rec.tasks[0].ID, rec.tasks[0].Attempt, rec.tasks[1].ID)
		}
	})
}

// TestLeaseLost: when another worker takes a task over (its lease expired
// and was reaped), the next heartbeat cancels the first handler with
// ErrLeaseLost and its late ack is rejected by the fencing token.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	var logs syncBuffer
	causes := make(chan error, 4)
	runs := make(chan int, 4)
	cfg := Config{Lease: time.Second, Heartbeat: 100 * time.Millisecond}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s := b.server(t, cfg,
		HandlerFunc(func(ctx context.Context, task *Task) error {
			runs <- task.Attempt
			if task.Attempt > 1 {
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil // a late "success": must be rejected
		}))
	info := b.enqueue(t, queue.NewRawTask("t", nil))
	if a := <-runs; a != 1 {
		t.Fatalf("first run attempt %d", a)
	}
	// Another worker's reaper, an hour ahead: the lease has expired for it.
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	later := fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
	res, err := script.Reap.Run(ctx, b.rdb, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Expire(), k.Done()},
		k.T, later, 1000, 1000).Int64Slice()
	must(t, err)
	if res[0] != 1 {
		t.Fatalf("reap requeued %d expired leases, want 1", res[0])
	}
	select {
	case c := <-causes:
		if !errors.Is(c, ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the handler whose lease was lost was not cancelled")
	}
	if a := <-runs; a != 2 {
		t.Fatalf("second run attempt %d, want 2", a)
	}
	waitFor(t, 3*time.Second, "the stale ack logged", func() bool {
		return bytes.Contains(logs.Bytes(), []byte("stale outcome rejected"))
	})
	waitFor(t, 3*time.Second, "the second run's ack", func() bool {
		_, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return errors.Is(err, queue.ErrNotFound)
	})
	_ = s
}

func TestPriorityAndLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("StrictPriority", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 10 {
			b.enqueue(t, queue.NewRawTask("t", []byte(fmt.Sprint("low", i))), queue.In("low"))
			b.enqueue(t, queue.NewRawTask("t", []byte(fmt.Sprint("high", i))), queue.In("high"))
		}
		rec := newRecorder(nil)
		b.server(t, Config{Queues: map[string]int{"high": 2, "low": 1}, StrictPriority: true, Concurrency: 1, FetchSize: 1}, rec)
		waitFor(t, 5*time.Second, "all 20", func() bool { return rec.total() == 20 })
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for i, task := range rec.tasks[:10] {
			if task.Queue != "high" {
				t.Fatalf("task %d came from %s before the high queue was empty", i, task.Queue)
			}
		}
	})

	t.Run("FleetWideLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var now, peak atomic.Int64
		h := HandlerFunc(func(ctx context.Context, task *Task) error {
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			now.Add(-1)
			return nil
		})
		cfg := Config{Concurrency: 5, Limits: map[string]queue.Limits{queue.DefaultQueue: {Concurrency: 3}}}
		b.server(t, cfg, h)
		b.server(t, cfg, h)
		tasks := make([]*queue.Task, 60)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("t", nil)
		}
		_, err := b.client.EnqueueMany(ctx, tasks)
		must(t, err)
		waitFor(t, 10*time.Second, "drained", func() bool {
			qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
			return qi.Pending == 0 && qi.Active == 0
		})
		if p := peak.Load(); p != 3 {
			t.Fatalf("peak of %d tasks at once across two workers, limit 3 (must be reached, never passed)", p)
		}
	})
}

func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var order []string
	mw := func(name string) Middleware {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, task *Task) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return next.ProcessTask(ctx, task)
			})
		}
	}
	done := make(chan struct{})
	b.server(t, Config{Middleware: []Middleware{mw("outer"), mw("inner")}}, HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		order = append(order, "handler")
		mu.Unlock()
		close(done)
		return nil
	}))
	b.enqueue(t, queue.NewRawTask("t", nil))
	<-done
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[outer inner handler]" {
		t.Fatalf("order %v", order)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := HandlerFunc(func(context.Context, *Task) error { return nil })
	for _, c := range []struct {
		cfg  Config
		says string // the field and its value
	}{
		{Config{Concurrency: -1}, "Config.Concurrency -1"},
		{Config{Queues: map[string]int{"a b": 1}}, `Config.Queues: `},
		{Config{Queues: map[string]int{"q": 0}}, `Config.Queues["q"] weight 0`},
		{Config{Limits: map[string]queue.Limits{"q": {Concurrency: -1}}}, "Config.Limits: "},
		{Config{Lease: time.Millisecond}, "Config.Lease 1ms"},
		{Config{Lease: time.Second, Heartbeat: 2 * time.Second}, "Config.Heartbeat 2s"},
		{Config{FetchSize: 5000}, "Config.FetchSize 5000"},
		{Config{Prefetch: 1001}, "Config.Prefetch 1001"},
		{Config{WorkflowSweep: -time.Second}, "Config.WorkflowSweep -1s"},
		{Config{ShutdownTimeout: -time.Second}, "Config.ShutdownTimeout -1s"},
		{Config{ForwardInterval: -time.Second}, "Config.ForwardInterval -1s"},
	} {
		if _, err := NewServer(b.rdb, c.cfg, h); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("NewServer(%+v): err = %v, want ErrInvalid saying %s", c.cfg, err, c.says)
		}
	}
	if _, err := NewServer(b.rdb, Config{}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil handler: err = %v", err)
	}
	// the embedded queue.Config's errors match both packages' sentinels
	bad := Config{Config: queue.Config{Partitions: map[string]int{"a": 0}}}
	if _, err := NewServer(b.rdb, bad, h); !errors.Is(err, ErrInvalid) || !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("bad queue.Config: err = %v, want worker's and queue's ErrInvalid", err)
	}
	var unset *redis.Client
	for _, rdb := range []redis.UniversalClient{nil, unset} {
		if _, err := NewServer(rdb, Config{}, h); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "nil Redis client") {
			t.Errorf("NewServer(%#v): err = %v, want ErrInvalid for a nil client", rdb, err)
		}
	}
}

// TestStartAfterShutdown: a Server runs once, and says so.
func TestStartAfterShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.server(t, Config{}, HandlerFunc(func(context.Context, *Task) error { return nil }))
	must(t, s.Shutdown(context.Background()))
	if err := s.Start(context.Background()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "make a new one") {
		t.Fatalf("Start after Shutdown: err = %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }

// TestCancelActiveTask: Inspector.CancelTask reaches the running handler
// at the next heartbeat (cause ErrCancelled) and the task goes to dead,
// not to a retry.
func TestCancelActiveTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	started := make(chan string, 1)
	causes := make(chan error, 1)
	b.server(t, Config{Lease: time.Second, Heartbeat: 100 * time.Millisecond}, HandlerFunc(func(ctx context.Context, task *Task) error {
		started <- task.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	info := b.enqueue(t, queue.NewRawTask("long", nil), queue.MaxRetry(5))
	if id := <-started; id != info.ID {
		t.Fatalf("started %s", id)
	}
	must(t, b.insp.CancelTask(ctx, queue.DefaultQueue, info.ID))
	select {
	case c := <-causes:
		if !errors.Is(c, ErrCancelled) {
			t.Fatalf("cause %v, want ErrCancelled", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	waitFor(t, 3*time.Second, "dead", func() bool {
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return err == nil && ti.State == queue.StateDead && strings.Contains(ti.LastError, "cancelled by an operator")
	})
}

// TestWarnsOfEviction: a worker on a Redis that may evict keys says so at
// start; on a noeviction Redis it does not.
func TestWarnsOfEviction(t *testing.T) {
	t.Parallel()
	for policy, warned := range map[string]bool{"allkeys-lru": true, "noeviction": false} {
		b := setup(t, redistest.WithArgs("--maxmemory-policy", policy))
		var logs syncBuffer
		cfg := Config{}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		b.server(t, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
		if got := strings.Contains(string(logs.Bytes()), "maxmemory-policy="+policy); got != warned {
			t.Errorf("policy %s: warned %v, want %v:\n%s", policy, got, warned, logs.Bytes())
		}
	}
}

// TestStartContextBoundsStartUpOnly: cancelling the context given to Start
// does not stop the server (as its godoc says); Shutdown does.
func TestStartContextBoundsStartUpOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := newRecorder(nil)
	s, err := NewServer(b.rdb, b.config(t, Config{}), rec)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	must(t, s.Start(ctx))
	cancel()
	info := b.enqueue(t, queue.NewRawTask("t", nil))
	waitFor(t, 10*time.Second, "the task to run after Start's context ended", func() bool { return rec.count(info.ID) == 1 })
	sctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	must(t, s.Shutdown(sctx))
}
