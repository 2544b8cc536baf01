// Package queuetest helps users test their own producers and handlers
// against a real Redis, without sleeping: a private redis-server per test
// (or a given URL), assertions on what was enqueued, and Drain, which runs
// due tasks through the user's own handler until the queues are idle,
// moving a controllable clock forward so scheduled tasks and retries with
// backoff run at once, in order (and a batch's callbacks and a workflow's
// released nodes before it returns), and Advance, which lets time pass on that
// clock with cron schedules ticking (Schedule).
//
//	func TestSignup(t *testing.T) {
//		env := queuetest.New(t)
//		signup(ctx, env.Client, "ann@example.com") // the code under test
//		env.RequireEnqueued(t, "email", "email:welcome")
//		res := env.Drain(t, mux, "email") // retries and scheduled tasks included
//		if res.Succeeded != 2 { ... }
//	}
package queuetest

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/internal/testclock"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// urlEnv names the environment variable that, when set, points every Env
// at that Redis instead of a private redis-server (Options.URL).
const urlEnv = "SHARDQ_TEST_REDIS_URL"

// Env is one test's shardq: a Redis, a Client and an Inspector with a key
// prefix of their own, and a clock Drain moves.
type Env struct {
	Redis     redis.UniversalClient
	Client    *queue.Client
	Inspector *queue.Inspector
	Config    queue.Config
	Clock     *Clock

	sched *worker.Server // Schedule's, never started: Advance ticks it
}

// Options sets up an Env. Its zero value is a private redis-server and
// the default queue.Config.
type Options struct {
	// Config is the Env's queue.Config; the Env replaces its Prefix with
	// its own, and discards shardq's logs when it has no Logger.
	Config queue.Config
	// URL is a Redis to use instead of a private redis-server: the Env
	// keeps its keys under a prefix of its own there and deletes them at
	// the end of the test. Defaults to $SHARDQ_TEST_REDIS_URL, and
	// without it a private redis-server.
	URL string
}

// New returns a test's Env: a private redis-server on a free loopback port
// (stopped at the end of the test), or the Redis of Options.URL or
// $SHARDQ_TEST_REDIS_URL. It takes at most one Options: queuetest.New(t)
// for the defaults.
func New(t testing.TB, opts ...Options) *Env {
	t.Helper()
	if len(opts) > 1 {
		t.Fatalf("queuetest: New takes at most one Options, got %d", len(opts))
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	o.URL = cmp.Or(o.URL, os.Getenv(urlEnv))
	if o.URL == "" {
		srv, err := redisproc.Start()
		if err != nil {
			t.Fatalf("queuetest: start a private redis-server (apt-get install -y redis-server): %v", err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		o.URL = srv.URL()
	}
	rdb, err := queue.NewRedisClient(o.URL)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	cfg := o.Config
	cfg.Prefix = "queuetest-" + wire.Nonce()
	cfg.Logger = cmpLogger(cfg.Logger)
	e := &Env{Redis: rdb, Config: cfg, Clock: &Clock{now: time.Now()}}
	if e.Client, err = queue.NewClient(rdb, cfg); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	if e.Inspector, err = queue.NewInspector(rdb, cfg); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	t.Cleanup(func() {
		e.deleteKeys()
		_ = rdb.Close()
	})
	return e
}

func cmpLogger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// deleteKeys removes every key under the Env's prefix.
func (e *Env) deleteKeys() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pattern := range []string{"{" + e.Config.Prefix + ":*", e.Config.Prefix + ":*"} {
		iter := e.Redis.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			e.Redis.Del(ctx, iter.Val())
		}
	}
}

// Clock is a clock the test moves: Drain's workers see its time in every
// script (leases, due times, retries), so waiting is advancing it. Each
// Env has one, Env.Clock, started at the time New was called.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// advanceTo moves the clock to t if t is later.
func (c *Clock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
}

// Enqueued returns the tasks of queue that wait to run: pending,
// scheduled and retrying, oldest first within each.
func (e *Env) Enqueued(ctx context.Context, q string) ([]*queue.TaskInfo, error) {
	var out []*queue.TaskInfo
	for _, s := range []queue.State{queue.StatePending, queue.StateScheduled, queue.StateRetry} {
		after := ""
		for {
			p, err := e.Inspector.ListTasks(ctx, queue.TaskQuery{Queue: q, State: s, After: after, Limit: inspect.MaxPageSize})
			if err != nil {
				return nil, err
			}
			out = append(out, p.Tasks...)
			if len(p.Tasks) < inspect.MaxPageSize {
				break
			}
			after = p.Next
		}
	}
	return out, nil
}

// RequireEnqueued fails t unless a task of type typ waits in queue q and
// matches every check given (for its payload, options...), and returns
// the first such task.
func (e *Env) RequireEnqueued(t testing.TB, q, typ string, checks ...func(*queue.TaskInfo) bool) *queue.TaskInfo {
	t.Helper()
	tasks, err := e.Enqueued(context.Background(), q)
	if err != nil {
		t.Fatalf("queuetest: read queue %q: %v", q, err)
	}
	var types []string
next:
	for _, ti := range tasks {
		types = append(types, ti.Type)
		if ti.Type != typ {
			continue
		}
		for _, ok := range checks {
			if !ok(ti) {
				continue next
			}
		}
		return ti
	}
	sort.Strings(types)
	t.Fatalf("queuetest: no %q task matching in queue %q; it holds %d: %s", typ, q, len(tasks), strings.Join(types, ", "))
	return nil
}

// DrainResult says what Drain or Advance ran.
type DrainResult struct {
	// Runs counts handler runs (attempts), Succeeded the tasks that succeeded,
	// Dead those that went to dead.
	Runs, Succeeded, Dead int
	// Advanced is how far the clock moved.
	Advanced time.Duration
}

// maxAdvance bounds how far one Drain moves the clock (a task scheduled
// further ahead is left waiting).
const maxAdvance = 30 * 24 * time.Hour

// Drain runs the tasks of queues (default: "default") through h on a
// worker that uses the Env's clock, until nothing is pending or running
// and nothing is due within 30 days: whenever only future tasks are
// left (scheduled, or retrying after their backoff), it moves the clock to
// the earliest, so they run at once, in order. Cron schedules do not tick
// in Drain (they never settle): Advance runs them. It fails t on a Redis
// error or when the queues do not settle within a minute of real time.
func (e *Env) Drain(t testing.TB, h worker.Handler, queues ...string) DrainResult {
	t.Helper()
	return e.run(t, h, queues, e.Clock.Now().Add(maxAdvance), false)
}

// Advance moves the Env's clock forward by d as if that much time passed
// with a worker running h on queues (default: the queues of the Env's
// schedules, or "default"): each cron tick of the schedules given to
// Schedule fires at its time, and tasks run as they become due (scheduled,
// retrying, enqueued by a tick), all in time order, without sleeping. At
// the end the clock reads d later than at the start, and nothing due by
// then is left pending or running. It fails t like Drain.
func (e *Env) Advance(t testing.TB, h worker.Handler, d time.Duration, queues ...string) DrainResult {
	t.Helper()
	if d < 0 {
		t.Fatalf("queuetest: Advance by %v: want a duration >= 0", d)
	}
	if len(queues) == 0 && e.sched != nil {
		queues = testclock.Queues(e.sched)
	}
	return e.run(t, h, queues, e.Clock.Now().Add(d), true)
}

// Schedule sets the cron schedules Advance fires, on the Env's clock (the
// last call wins). A bad schedule fails t with the worker's error.
func (e *Env) Schedule(t testing.TB, schedules ...worker.Schedule) {
	t.Helper()
	if len(schedules) == 0 {
		e.sched = nil
		return
	}
	// a server with schedules and no handler only schedules
	s, err := worker.NewServer(e.Redis, worker.Config{Config: e.Config, Schedules: schedules, Clock: e.Clock.Now}, nil)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	// the first tick records where each schedule starts: the clock's now
	if err := testclock.Tick(context.Background(), s); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	e.sched = s
}

// run is Drain and Advance: it runs queues' tasks through h until they are
// idle, moving the clock to each next event (a due task, and with ticks a
// cron tick) up to limit; with exact, it ends with the clock at limit.
func (e *Env) run(t testing.TB, h worker.Handler, queues []string, limit time.Time, ticks bool) DrainResult {
	t.Helper()
	if len(queues) == 0 {
		queues = []string{queue.DefaultQueue}
	}
	ctx := context.Background()
	var mu sync.Mutex
	var res DrainResult
	counting := worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		err := h.ProcessTask(ctx, task)
		mu.Lock()
		res.Runs++
		mu.Unlock()
		return err
	})
	weights := map[string]int{}
	for _, q := range queues {
		weights[q] = 1
	}
	start := e.Clock.Now()
	srv, err := worker.NewServer(e.Redis, worker.Config{Config: e.Config, Queues: weights, Concurrency: 4,
		Clock: e.Clock.Now, ForwardInterval: 5 * time.Millisecond, Heartbeat: 100 * time.Millisecond,
		Observer: counter{&mu, &res}}, counting)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	sched := e.sched
	if !ticks {
		sched = nil
	}
	deadline := time.Now().Add(time.Minute)
	for idle := 0; idle < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queuetest: queues %v did not settle within a minute", queues)
		}
		busy, next := false, time.Time{}
		for _, q := range queues {
			qi := e.info(t, q)
			if qi.Pending+qi.Active > 0 {
				busy = true
			}
			for _, s := range []queue.State{queue.StateScheduled, queue.StateRetry} {
				if d := e.nextDue(t, q, s); !d.IsZero() && (next.IsZero() || d.Before(next)) {
					next = d
				}
			}
		}
		tick := time.Time{}
		if sched != nil {
			tick = testclock.Next(sched)
		}
		switch {
		case busy || e.flowBusy(t, queues):
			idle = 0
		case !tick.IsZero() && !tick.After(limit) && (next.IsZero() || !tick.After(next)):
			// a cron tick comes first: run it at its time
			e.Clock.advanceTo(tick)
			if err := testclock.Tick(ctx, sched); err != nil {
				t.Fatalf("queuetest: cron tick at %v: %v", tick, err)
			}
			idle = 0
		case !next.IsZero() && !next.After(limit):
			e.Clock.advanceTo(next)
			idle = 0
		default:
			idle++ // quiet three times in a row: settled
		}
	}
	if ticks {
		e.Clock.advanceTo(limit)
	}
	mu.Lock()
	defer mu.Unlock()
	out := res
	out.Advanced = e.Clock.Now().Sub(start)
	return out
}

// counter counts handler results for Drain.
type counter struct {
	mu  *sync.Mutex
	res *DrainResult
}

func (c counter) HandlerStarted(string, string) {}
func (c counter) HandlerFinished(e worker.HandlerEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.State {
	case queue.StateSucceeded:
		c.res.Succeeded++
	case queue.StateDead:
		c.res.Dead++
	}
}
func (c counter) LeaseLost(string)  {}
func (c counter) RedisError(string) {}

func (e *Env) info(t testing.TB, q string) *queue.QueueInfo {
	t.Helper()
	qi, err := e.Inspector.QueueInfo(context.Background(), q)
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	return qi
}

// nextDue returns when the earliest task of q in state s is due; zero when none.
func (e *Env) nextDue(t testing.TB, q string, s queue.State) time.Time {
	t.Helper()
	p, err := e.Inspector.ListTasks(context.Background(), queue.TaskQuery{Queue: q, State: s, Limit: 1})
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	if len(p.Tasks) == 0 {
		return time.Time{}
	}
	return p.Tasks[0].NextProcessAt
}
