package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/lua"
	"github.com/shardq/shardq/queue"
)

// gauge tracks how many handlers run at once, overall and per key.
type gauge struct {
	mu      sync.Mutex
	now     map[string]int
	peak    map[string]int
	starts  []time.Time
	finishe map[string][]time.Time
}

func newGauge() *gauge {
	return &gauge{now: map[string]int{}, peak: map[string]int{}, finishe: map[string][]time.Time{}}
}

func (g *gauge) handler(work time.Duration, key func(*Task) string) Handler {
	return HandlerFunc(func(ctx context.Context, t *Task) error {
		k := key(t)
		g.mu.Lock()
		g.starts = append(g.starts, t.StartedAt)
		for _, name := range []string{"", k} {
			g.now[name]++
			g.peak[name] = max(g.peak[name], g.now[name])
		}
		g.mu.Unlock()
		time.Sleep(work)
		g.mu.Lock()
		g.now[""]--
		g.now[k]--
		g.finishe[k] = append(g.finishe[k], time.Now())
		g.mu.Unlock()
		return nil
	})
}

func (g *gauge) peakOf(k string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak[k]
}

func (g *gauge) finished(k string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.finishe[k])
}

func enqueueN(t *testing.T, b *bundle, n int, opts ...queue.Option) {
	t.Helper()
	tasks := make([]*queue.Task, n)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("t", []byte(fmt.Sprint(i)))
	}
	_, err := b.client.EnqueueMany(context.Background(), tasks, opts...)
	must(t, err)
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// At the limit, a fetcher looks again when a task of its queue
	// finishes here, not after a poll: with limit 2 and no-op handlers the
	// next tasks start right after the last ones end. (It used to wait
	// idlePoll, 250 ms, each time: two tasks per quarter second.)
	t.Run("NextStartsWhenOneFinishes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{Concurrency: 2}))
		const n = 40
		enqueueN(t, b, n)
		var mu sync.Mutex
		var starts []time.Time
		b.server(t, Config{Concurrency: 10}, HandlerFunc(func(context.Context, *Task) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return nil
		}))
		waitFor(t, 30*time.Second, "all started", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(starts) == n
		})
		mu.Lock()
		defer mu.Unlock()
		long := 0
		for i := 1; i < n; i++ {
			if starts[i].Sub(starts[i-1]) >= 200*time.Millisecond {
				long++
			}
		}
		if long > 4 {
			t.Fatalf("%d of %d gaps between starts were 200ms or more: the fetcher polls instead of waking when a task finishes (all %d took %v)",
				long, n-1, n, starts[n-1].Sub(starts[0]))
		}
	})

	// SetLimits applies to running workers at their next dequeue.
	t.Run("ChangesWithoutRestart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{Concurrency: 1}))
		g := newGauge()
		b.server(t, Config{Concurrency: 8}, g.handler(30*time.Millisecond, func(*Task) string { return "all" }))
		enqueueN(t, b, 20)
		waitFor(t, 10*time.Second, "ten done", func() bool { return g.finished("all") >= 10 })
		if p := g.peakOf("all"); p != 1 {
			t.Fatalf("peak %d under limit 1", p)
		}
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{Concurrency: 4}))
		enqueueN(t, b, 40)
		waitFor(t, 10*time.Second, "all done", func() bool { return g.finished("all") == 60 })
		if p := g.peakOf("all"); p != 4 {
			t.Fatalf("peak %d after raising the limit to 4, want 4", p)
		}
		// handlers are done; their acks may still be on the way
		waitFor(t, 3*time.Second, "the last acks", func() bool {
			li, err := b.insp.LimitInfo(ctx, queue.DefaultQueue)
			return err == nil && li.Running == 0
		})
		li, err := b.insp.LimitInfo(ctx, queue.DefaultQueue)
		must(t, err)
		// no rate limit was set: no window is reported either
		if li.Limits != (queue.Limits{Concurrency: 4}) || li.Running != 0 {
			t.Fatalf("LimitInfo = %+v", li)
		}
	})

	// Clearing the limits deletes them, so a dequeue finds neither limits
	// nor a paused flag and takes its fast path: no limit applies.
	t.Run("ClearedLimitsAreGone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{Concurrency: 1}))
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{}))
		k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
		if n := b.rdb.Exists(ctx, k.Limits()).Val(); n != 0 {
			t.Fatalf("limits hash %s still there after clearing them", k.Limits())
		}
		g := newGauge()
		b.server(t, Config{Concurrency: 8}, g.handler(50*time.Millisecond, func(*Task) string { return "all" }))
		enqueueN(t, b, 16)
		waitFor(t, 10*time.Second, "all done", func() bool { return g.finished("all") == 16 })
		if p := g.peakOf("all"); p < 2 {
			t.Fatalf("peak %d with the limit of 1 cleared", p)
		}
	})

	// A crashed holder's slot comes back when its lease expires, at the next
	// dequeue, without waiting for a reaper.
	t.Run("ExpiredHolderSlotComesBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{Concurrency: 1}))
		enqueueN(t, b, 2)
		// a worker that leases one task for 400ms and dies
		k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
		res, err := script.Pop.Run(ctx, b.rdb, []string{k.First(), k.Last(), k.Active(), k.Msg(), k.State(), k.Paused(), k.Limits(),
			k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire(), k.FairRing(), k.FairDue()},
			k.T, 1, 400, "", "crashed", 1000, 10000, 1).Slice()
		must(t, err)
		if len(res) != 6 { // status, shard, now, ack codes, messages, other attempts
			t.Fatalf("crashed worker's pop replied %d values", len(res))
		}
		if msgs, _ := res[4].([]any); len(msgs) != 1 {
			t.Fatalf("crashed worker leased %d tasks", len(msgs))
		}
		rec := newRecorder(nil)
		start := time.Now()
		b.server(t, Config{Lease: time.Minute, Heartbeat: 20 * time.Second}, rec) // its reaper will not run in time
		waitFor(t, 3*time.Second, "both tasks", func() bool { return rec.total() == 2 })
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Fatalf("the second task started after %v, before the crashed lease expired", d)
		}
	})
}

// TestRateLimit: 50 starts per second over five seconds: no second (no
// window of one second) holds more than 50 starts, and the rate is close
// to 50 on average.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.insp.SetLimits(context.Background(), queue.DefaultQueue, queue.Limits{Rate: 50, Per: time.Second}))
	enqueueN(t, b, 400)
	g := newGauge()
	b.server(t, Config{Concurrency: 16}, g.handler(0, func(*Task) string { return "" }))
	b.server(t, Config{Concurrency: 16}, g.handler(0, func(*Task) string { return "" }))
	time.Sleep(5200 * time.Millisecond)
	g.mu.Lock()
	starts := append([]time.Time(nil), g.starts...)
	g.mu.Unlock()
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if len(starts) == 0 {
		t.Fatal("nothing started")
	}
	// every sliding window of one second, by the server's lease times
	for i, j := 0, 0; i < len(starts); i++ {
		for starts[i].Sub(starts[j]) >= time.Second {
			j++
		}
		if n := i - j + 1; n > 50 {
			t.Fatalf("%d starts within one second, limit 50", n)
		}
	}
	span := starts[len(starts)-1].Sub(starts[0]).Seconds()
	rate := float64(len(starts)-50) / span // the first 50 start at once
	if len(starts) < 220 || rate < 40 || rate > 52 {
		t.Fatalf("%d starts over %.1fs (%.1f/s after the first burst), want about 50/s", len(starts), span, rate)
	}
}

// TestGroupConcurrency: group limit 1, three groups, a hot group holding 90% of
// the tasks. Fairness measure: every task of the two cold groups finishes
// before a quarter of the hot group's tasks have (without parking they would
// wait behind the hot group's backlog), and no group ever runs two at once.
func TestGroupConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{GroupConcurrency: 1}))
	var tasks []*queue.Task
	for i := range 100 {
		key := "hot"
		if i >= 90 {
			key = []string{"cold-a", "cold-b"}[i%2]
		}
		tasks = append(tasks, queue.NewRawTask("t", []byte(key), queue.Group(key)))
	}
	_, err := b.client.EnqueueMany(ctx, tasks) // the cold tasks are last in line
	must(t, err)
	g := newGauge()
	h := g.handler(15*time.Millisecond, func(t *Task) string { return string(t.Payload) })
	b.server(t, Config{Concurrency: 8}, h)
	b.server(t, Config{Concurrency: 8}, h)
	waitFor(t, 10*time.Second, "cold tasks", func() bool { return g.finished("cold-a")+g.finished("cold-b") == 10 })
	if hot := g.finished("hot"); hot > 22 {
		t.Fatalf("the cold keys finished only after %d of 90 hot tasks: starved", hot)
	}
	li, err := b.insp.LimitInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if li.Groups["hot"].Waiting < 10 {
		t.Fatalf("LimitInfo while the hot key is busy: %+v", li)
	}
	// the hot key's tasks wait in its list: pending while it is in the
	// ring, held (Waiting) while it sits out at its limit
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Pending+qi.Waiting < 10 {
		t.Fatalf("QueueInfo: %d pending, %d waiting; want the hot tasks counted", qi.Pending, qi.Waiting)
	}
	waitFor(t, 10*time.Second, "every task", func() bool { return g.finished("hot") == 90 })
	for _, k := range []string{"hot", "cold-a", "cold-b"} {
		if p := g.peakOf(k); p != 1 {
			t.Fatalf("key %s ran %d at once, limit 1", k, p)
		}
	}
	waitFor(t, 3*time.Second, "counters settle", func() bool {
		li, _ := b.insp.LimitInfo(ctx, queue.DefaultQueue)
		return li.Waiting == 0 && len(li.Groups) == 0
	})
}

// TestKeyParkedTasksSurviveWorkers: a key's waiting tasks live in Redis:
// with every worker gone mid-way, a new worker finishes them all, none
// lost.
func TestKeyParkedTasksSurviveWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{GroupConcurrency: 1}))
	enqueueN(t, b, 30, queue.Group("tenant"))
	var ran atomic.Int64
	h := HandlerFunc(func(ctx context.Context, t *Task) error {
		time.Sleep(20 * time.Millisecond)
		ran.Add(1)
		return nil
	})
	cfg := b.config(t, Config{Concurrency: 4})
	s, err := NewServer(b.rdb, cfg, h)
	must(t, err)
	must(t, s.Start(ctx))
	waitFor(t, 5*time.Second, "a few", func() bool { return ran.Load() >= 3 })
	must(t, s.Shutdown(ctx))
	qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	if qi.Pending == 0 {
		t.Fatalf("no task waiting when the worker stopped: %+v", qi)
	}
	if left := qi.Pending + qi.Waiting + qi.Active; left+ran.Load() != 30 {
		t.Fatalf("%d ran + %d left (%+v) != 30", ran.Load(), left, qi)
	}
	b.server(t, Config{Concurrency: 4}, h)
	waitFor(t, 10*time.Second, "the rest", func() bool { return ran.Load() == 30 })
}

// TestSemaphoreMiddleware: a semaphore of 2 shared by two queues and two
// workers: never more than 2 handlers under it, the limit is reached, and
// tasks that waited were snoozed without costing attempts.
func TestSemaphoreMiddleware(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGauge()
	var attempts atomic.Int64
	inner := g.handler(30*time.Millisecond, func(*Task) string { return "api" })
	h := HandlerFunc(func(ctx context.Context, t *Task) error {
		if t.Attempt != 1 {
			attempts.Add(1)
		}
		return inner.ProcessTask(ctx, t)
	})
	mw, err := Semaphore(b.rdb, SemaphoreConfig{Name: "billing-api", Limit: 2, Prefix: b.qcfg.Prefix, TTL: 3 * time.Second,
		Wait: 10 * time.Millisecond, RetryIn: 50 * time.Millisecond})
	must(t, err)
	cfg := Config{Queues: map[string]int{"invoices": 1, "refunds": 1}, Concurrency: 4, ForwardInterval: 20 * time.Millisecond,
		Middleware: []Middleware{mw}}
	b.server(t, cfg, h)
	b.server(t, cfg, h)
	enqueueN(t, b, 15, queue.In("invoices"))
	enqueueN(t, b, 15, queue.In("refunds"))
	waitFor(t, 15*time.Second, "all 30", func() bool { return g.finished("api") == 30 })
	if p := g.peakOf("api"); p != 2 {
		t.Fatalf("peak %d under a semaphore of 2, want 2", p)
	}
	if n := attempts.Load(); n != 0 {
		t.Fatalf("%d runs had attempt > 1: snoozing cost attempts", n)
	}
	// the middleware releases each slot just after its handler returns
	sem := &lua.FairSemaphore{Key: keys.Semaphore(b.qcfg.Prefix, "billing-api"), Limit: 2, TTL: 3 * time.Second}
	waitFor(t, 3*time.Second, "every slot released", func() bool {
		holders, err := sem.Holders(context.Background(), b.rdb)
		return err == nil && len(holders) == 0
	})
}

// TestSemaphoreSlotLost: a handler whose semaphore slot is lost while it
// runs (here its holder is removed, as an expiry would) has its context
// cancelled with ErrLeaseLost wrapped by a message naming the semaphore,
// and what it returns still decides: nil acks the task.
func TestSemaphoreSlotLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	mw, err := Semaphore(b.rdb, SemaphoreConfig{Name: "billing-api", Limit: 1, Prefix: b.qcfg.Prefix, TTL: 300 * time.Millisecond})
	must(t, err)
	started := make(chan struct{})
	causes := make(chan error, 1)
	h := HandlerFunc(func(ctx context.Context, t *Task) error {
		close(started)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-time.After(15 * time.Second):
			causes <- nil
		}
		return nil
	})
	b.server(t, Config{Middleware: []Middleware{mw}}, h)
	_, err = b.client.Enqueue(ctx, queue.NewRawTask("api", nil))
	must(t, err)
	<-started
	must(t, b.rdb.Del(ctx, keys.Semaphore(b.qcfg.Prefix, "billing-api")).Err())
	cause := <-causes
	if !errors.Is(cause, ErrLeaseLost) || !strings.Contains(cause.Error(), "semaphore billing-api") {
		t.Fatalf("cause %v, want ErrLeaseLost naming the semaphore", cause)
	}
	waitFor(t, 10*time.Second, "the task succeeded", func() bool {
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.SucceededTotal == 1 && qi.FailedTotal == 0
	})
}

// TestSemaphoreBadLimits: a bad name or prefix, a limit below 1, a TTL
// below 1ms or a negative wait or retry is a clear error when the
// middleware is built, not when a task runs, naming the field and its
// value.
func TestSemaphoreBadLimits(t *testing.T) {
	t.Parallel()
	bad := []struct {
		cfg  SemaphoreConfig
		says string
	}{
		{SemaphoreConfig{Limit: 1}, `Name ""`},
		{SemaphoreConfig{Name: "bad name", Limit: 1}, `Name "bad name"`},
		{SemaphoreConfig{Name: "api"}, "Limit 0"},
		{SemaphoreConfig{Name: "api", Limit: -1}, "Limit -1"},
		{SemaphoreConfig{Name: "api", Limit: 1, TTL: time.Microsecond}, "TTL 1µs"},
		{SemaphoreConfig{Name: "api", Limit: 1, TTL: -time.Second}, "TTL -1s"},
		{SemaphoreConfig{Name: "api", Limit: 1, Wait: -time.Second}, "Wait -1s"},
		{SemaphoreConfig{Name: "api", Limit: 1, RetryIn: -time.Second}, "RetryIn -1s"},
		{SemaphoreConfig{Name: "api", Limit: 1, Prefix: "{x}"}, `Prefix "{x}"`},
	}
	for _, c := range bad {
		if _, err := Semaphore(nil, c.cfg); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "SemaphoreConfig."+c.says) {
			t.Errorf("Semaphore(%+v): err = %v, want ErrInvalid saying SemaphoreConfig.%s", c.cfg, err, c.says)
		}
	}
	// the zero TTL, Wait, RetryIn and Prefix are the defaults, not errors
	if _, err := Semaphore(nil, SemaphoreConfig{Name: "api", Limit: 1}); err != nil {
		t.Errorf("Semaphore with defaults: %v", err)
	}
}
