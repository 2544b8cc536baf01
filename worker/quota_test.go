package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestFleetWideLimitOnCluster: a queue of 4 partitions spread over the
// masters of a 3-master cluster, a concurrency limit of 4 for the whole
// queue, three servers of 4 slots each: never more than 4 handlers at
// once, 4 reached, with the work spread and then all in one partition.
func TestFleetWideLimitOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"fleet": 4}}
	nodes := map[string]bool{}
	for i := range 4 {
		node, err := rdb.MasterForKey(ctx, keys.For(qcfg.Prefix, "fleet", i).Limits())
		must(t, err)
		nodes[node.String()] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("the 4 partitions all landed on one master: the test shows nothing")
	}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	must(t, insp.SetLimits(ctx, "fleet", queue.Limits{Concurrency: 4}))

	var running, peak, done atomic.Int64
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(15 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return nil
	})
	for range 3 {
		cfg := Config{Config: qcfg, Queues: map[string]int{"fleet": 1}, Concurrency: 4}
		cfg.Logger = testLogger(t)
		startServer(t, rdb, cfg, h)
	}
	enqueue := func(n int, opts ...queue.Option) {
		tasks := make([]*queue.Task, n)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("t", nil)
		}
		_, err := client.EnqueueMany(ctx, tasks, append(opts, queue.In("fleet"))...)
		must(t, err)
	}
	enqueue(300)
	waitFor(t, 60*time.Second, "every spread task", func() bool { return done.Load() == 300 })
	if p := peak.Load(); p != 4 {
		t.Fatalf("peak %d handlers at once over 4 partitions on %d masters, want the fleet-wide limit 4", p, len(nodes))
	}
	peak.Store(0)
	enqueue(200, queue.Group("one-tenant"))
	waitFor(t, 60*time.Second, "every task of the one partition", func() bool { return done.Load() == 500 })
	if p := peak.Load(); p != 4 {
		t.Fatalf("peak %d with every task in one partition, want 4: the quotas did not follow the work", p)
	}
}

// TestFleetWideRateAndKeyLimits: on a queue of 4 partitions, the rate
// limit holds for the whole queue (60 starts at 20 per 500ms take at
// least a second, however the tasks spread), and a key's tasks, all in one
// partition, run one at a time.
func TestFleetWideRateAndKeyLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	qcfg := b.qcfg
	qcfg.Partitions = map[string]int{"fleet": 4}
	client, err := queue.NewClient(b.rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(b.rdb, qcfg)
	must(t, err)
	must(t, insp.SetLimits(ctx, "fleet", queue.Limits{Rate: 20, Per: 500 * time.Millisecond, GroupConcurrency: 1}))

	var mu sync.Mutex
	var starts []time.Time
	perKey := map[string]int{}
	over := ""
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		starts = append(starts, time.Now())
		key := string(task.Payload) // the task's group
		perKey[key]++
		if key != "" && perKey[key] > 1 {
			over = key
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		perKey[string(task.Payload)]--
		mu.Unlock()
		return nil
	})
	for range 2 {
		cfg := Config{Config: qcfg, Queues: map[string]int{"fleet": 1}, Concurrency: 8}
		cfg.Logger = testLogger(t)
		startServer(t, b.rdb, cfg, h)
	}
	var tasks []*queue.Task
	for i := range 60 {
		var opts []queue.Option
		key := ""
		if i%2 == 0 {
			key = []string{"k1", "k2", "k3"}[i%3]
			opts = append(opts, queue.Group(key))
		}
		tasks = append(tasks, queue.NewRawTask("t", []byte(key), opts...))
	}
	_, err = client.EnqueueMany(ctx, tasks, queue.In("fleet"))
	must(t, err)
	waitFor(t, 30*time.Second, "every task", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == 60
	})
	mu.Lock()
	defer mu.Unlock()
	if over != "" {
		t.Fatalf("two tasks of key %q ran at once across partitions, GroupConcurrency 1", over)
	}
	// 20 may start at once, then 20 per 500ms: the 60th no sooner than 1s
	// after the first (a per-partition limit would let all 60 go at once)
	if span := starts[59].Sub(starts[0]); span < 900*time.Millisecond {
		t.Fatalf("60 starts within %v at a fleet-wide rate of 20 per 500ms, want at least 1s", span)
	}
}

// BenchmarkFleetWideLimit compares a concurrency limit of 8 on one
// partition with the same limit held fleet-wide over 4 partitions whose
// tasks all sit in one of them (one group), so the quotas must
// move there first. Handlers take 2ms, so the limit, not Redis, bounds
// the rate. It reports the
// ms from the first start until 8 ran at once (for the partitioned queue:
// until the quotas had moved), and tasks/s from then to the last return.
func BenchmarkFleetWideLimit(b *testing.B) {
	for _, parts := range []int{1, 4} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			ctx := context.Background()
			rdb := redistest.Start(b).Client(b)
			qcfg := queue.Config{Prefix: redistest.Prefix(b), Partitions: map[string]int{"q": parts}}
			client, _ := queue.NewClient(rdb, qcfg)
			insp, _ := queue.NewInspector(rdb, qcfg)
			if err := insp.SetLimits(ctx, "q", queue.Limits{Concurrency: 8}); err != nil {
				b.Fatal(err)
			}
			n := max(b.N, 2000)
			var running, done, doneAtFull atomic.Int64
			var first, full, last atomic.Int64
			all := make(chan struct{})
			cfg := Config{Config: qcfg, Queues: map[string]int{"q": 1}, Concurrency: 16}
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			s, err := NewServer(rdb, cfg, HandlerFunc(func(context.Context, *Task) error {
				now := time.Now().UnixNano()
				first.CompareAndSwap(0, now)
				if running.Add(1) == 8 && full.CompareAndSwap(0, now) {
					doneAtFull.Store(done.Load())
				}
				time.Sleep(2 * time.Millisecond)
				running.Add(-1)
				last.Store(time.Now().UnixNano())
				if done.Add(1) == int64(n) {
					close(all)
				}
				return nil
			}))
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Shutdown(ctx) }()
			time.Sleep(time.Second) // the first rebalance has split the idle limit
			b.ResetTimer()
			for i := 0; i < n; i += 500 {
				batch := make([]*queue.Task, min(500, n-i))
				for j := range batch {
					batch[j] = queue.NewRawTask("t", nil)
				}
				if _, err := client.EnqueueMany(ctx, batch, queue.In("q"), queue.Group("one")); err != nil {
					b.Fatal(err)
				}
			}
			<-all
			b.StopTimer()
			if full.Load() == 0 {
				b.Fatal("8 never ran at once")
			}
			// the rate once the limit was reached (the quotas had moved)
			span := time.Duration(last.Load() - full.Load())
			b.ReportMetric(float64(int64(n)-doneAtFull.Load())/span.Seconds(), "tasks/s")
			b.ReportMetric(float64(full.Load()-first.Load())/1e6, "ms-to-limit")
		})
	}
}
