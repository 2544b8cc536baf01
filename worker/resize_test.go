package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/serve"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// produced is what a producer enqueued: each task's ID and partition, and
// whether it was enqueued after the count was lowered.
type produced struct {
	mu      sync.Mutex
	ids     []string
	late    []int // partitions of tasks whose enqueue began after lowered was set
	lowered time.Time
}

func (p *produced) add(infos []*queue.TaskInfo, began time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range infos {
		if in == nil {
			continue
		}
		p.ids = append(p.ids, in.ID)
		if !p.lowered.IsZero() && began.After(p.lowered) {
			p.late = append(p.late, in.Partition)
		}
	}
}

// produceResizing enqueues small batches until stop closes, or at most max
// tasks, or a minute: plain (round-robin) tasks and tasks with chosen IDs
// (placed by hash) in turns.
func produceResizing(t *testing.T, c *queue.Client, q string, out *produced, stop <-chan struct{}, tag string) {
	const max = 6000
	deadline := time.Now().Add(time.Minute)
	for n := 0; n < max && time.Now().Before(deadline); n += 4 {
		select {
		case <-stop:
			return
		default:
		}
		tasks := make([]*queue.Task, 4)
		for i := range tasks {
			opts := []queue.Option{queue.In(q)}
			if i%2 == 1 {
				opts = append(opts, queue.TaskID(fmt.Sprintf("%s-%d", tag, n+i)))
			}
			tasks[i] = queue.NewRawTask("t", nil, opts...)
		}
		began := time.Now()
		infos, err := c.EnqueueMany(context.Background(), tasks)
		if err != nil {
			t.Errorf("enqueue: %v", err)
			return
		}
		out.add(infos, began)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestResizePartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OneToFourToTwoWhileRunning", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		resizeWhileRunning(t, b.rdb, b.qcfg, "resize")
	})

	t.Run("OneToFourToTwoOnCluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3)
		rdb := clusterClient(t, cl)
		qcfg := queue.Config{Prefix: redistest.Prefix(t)}
		q, _ := spreadQueue(t, cl, qcfg.Prefix, 4) // partitions 0..3 over the 3 masters
		resizeWhileRunning(t, rdb, qcfg, q)
	})

	t.Run("DeadTaskHoldsTheDrainOpen", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const q = "resize"
		must(t, b.insp.SetPartitions(ctx, q, 2))
		h := newRecorder(func(_ context.Context, task *Task) error {
			if string(task.Payload) == "die" {
				return SkipRetry(fmt.Errorf("on purpose"))
			}
			return nil
		})
		s := b.server(t, Config{Queues: map[string]int{q: 1}, QueueRefresh: 50 * time.Millisecond}, h)
		c, err := queue.NewClient(b.rdb, b.qcfg)
		must(t, err)
		// a chosen ID that lands on partition 1 of 2
		var dead *queue.TaskInfo
		for i := 0; dead == nil || dead.Partition != 1; i++ {
			dead, err = c.Enqueue(ctx, queue.NewRawTask("t", []byte("die")), queue.In(q), queue.TaskID(fmt.Sprint("dead-", i)))
			must(t, err)
		}
		waitFor(t, 20*time.Second, "the task to go dead", func() bool {
			qi, err := b.insp.QueueInfo(ctx, q)
			return err == nil && qi.Dead >= 1 && qi.Pending == 0 && qi.Active == 0
		})
		must(t, b.insp.SetPartitions(ctx, q, 1))
		time.Sleep(2*serve.DrainConfirm + time.Second)
		if qi, err := b.insp.QueueInfo(ctx, q); err != nil || qi.Partitions != 2 || qi.Draining != 1 {
			t.Fatalf("with a dead task in partition 1: QueueInfo %+v, %v; want it still draining (2 partitions, 1 draining)", qi, err)
		}
		qi, err := b.insp.QueueInfo(ctx, q)
		must(t, err)
		if qi.Dead < 1 || qi.Partitions != 2 {
			t.Fatalf("QueueInfo while draining = %+v, want the dead task counted over 2 partitions", qi)
		}
		// the operator's retry runs it where it is (it fails again: delete it)
		dq, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: q, State: queue.StateDead})
		must(t, err)
		for _, ti := range dq.Tasks {
			must(t, b.insp.DeleteTask(ctx, q, ti.ID))
		}
		waitFor(t, 30*time.Second, "the drain to end once the dead task is gone", func() bool {
			qi, err := b.insp.QueueInfo(ctx, q)
			return err == nil && qi.Partitions == 1 && qi.Draining == 0
		})
		waitFor(t, 10*time.Second, "the server to stop serving partition 1", func() bool { return s.engine.Widths()[q] == 1 })
	})

	t.Run("PatternMatchedQueueFollowsTheLayout", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const q = "tenant:a"
		var mu sync.Mutex
		parts := map[int]int{}
		h := newRecorder(func(_ context.Context, task *Task) error {
			mu.Lock()
			parts[task.Partition]++
			mu.Unlock()
			return nil
		})
		s := b.server(t, Config{QueuePatterns: map[string]int{"tenant:*": 1}, QueueRefresh: 50 * time.Millisecond}, h)
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In(q))
		waitFor(t, 20*time.Second, "the first task to run", func() bool { return h.total() == 1 })
		must(t, b.insp.SetPartitions(ctx, q, 3))
		waitFor(t, 20*time.Second, "the server to serve 3 partitions", func() bool { return s.engine.Widths()[q] == 3 })
		c, err := queue.NewClient(b.rdb, b.qcfg) // reads the layout at its first enqueue
		must(t, err)
		for range 30 {
			_, err := c.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In(q))
			must(t, err)
		}
		waitFor(t, 20*time.Second, "every task to run", func() bool { return h.total() == 31 })
		mu.Lock()
		on2 := parts[2]
		mu.Unlock()
		if on2 == 0 {
			t.Fatal("no task ran on partition 2")
		}
		must(t, b.insp.SetPartitions(ctx, q, 1))
		waitFor(t, 30*time.Second, "the drain to end and the server to serve 1", func() bool { return s.engine.Widths()[q] == 1 })
		// deleting the queue still stops it (the served queue's parts are consistent)
		must(t, b.insp.DeleteQueue(ctx, q, true))
		waitFor(t, 20*time.Second, "the deleted queue to be dropped", func() bool {
			_, ok := s.engine.Queues()[q]
			return !ok
		})
	})
}

// resizeWhileRunning enqueues continuously from two producers while two
// workers run queue q, and takes its partition count 1 -> 4 -> 2: the new
// partitions receive tasks without a restart, none enqueued after the
// lowering lands on a removed partition, every task runs exactly once, and
// the removed partitions end empty and unserved.
func resizeWhileRunning(t *testing.T, rdb redis.UniversalClient, qcfg queue.Config, q string) {
	ctx := context.Background()
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	start := func(cfg Config, h Handler) *Server {
		cfg.Config, cfg.Logger = qcfg, testLogger(t)
		s, err := NewServer(rdb, cfg, h)
		must(t, err)
		must(t, s.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.Shutdown(sctx)
		})
		return s
	}
	var mu sync.Mutex
	parts := map[int]int{}
	h := newRecorder(func(_ context.Context, task *Task) error {
		mu.Lock()
		parts[task.Partition]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	})
	cfg := Config{Queues: map[string]int{q: 1}, Concurrency: 4, QueueRefresh: 100 * time.Millisecond}
	servers := []*Server{start(cfg, h), start(cfg, h)}

	out := &produced{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		c, err := queue.NewClient(rdb, qcfg) // a producer of its own, started before any resize
		must(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); produceResizing(t, c, q, out, stop, fmt.Sprint("p", i)) }()
	}
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, 20*time.Second, "tasks to run on the single partition", func() bool { return h.total() > 50 })
	// QueueInfo throughout the resize: every task enqueued is counted once
	// (pending, running, done), within what is in flight at the instant
	stopSampling := sampleQueueInfo(t, insp, q, out)

	raised := time.Now()
	must(t, insp.SetPartitions(ctx, q, 4))
	if qi, err := insp.QueueInfo(ctx, q); err != nil || qi.Partitions != 4 || qi.Draining != 0 {
		t.Fatalf("raising to 4: QueueInfo %+v, %v", qi, err)
	}
	waitFor(t, 30*time.Second, "tasks to run on partition 3, without a restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return parts[3] > 20
	})
	t.Logf("raised to 4: partition 3 had run 20 tasks %v after SetPartitions", time.Since(raised).Round(time.Millisecond))
	qi, err := insp.QueueInfo(ctx, q)
	must(t, err)
	if qi.Partitions != 4 {
		t.Fatalf("QueueInfo.Partitions = %d after raising to 4", qi.Partitions)
	}

	lowered := time.Now()
	must(t, insp.SetPartitions(ctx, q, 2))
	// from here no enqueue may land on 2 or 3 (one that began before
	// may have been routed there and accepted before the close)
	out.mu.Lock()
	out.lowered = time.Now()
	out.mu.Unlock()
	qi, err = insp.QueueInfo(ctx, q)
	must(t, err)
	if qi.Partitions != 4 || qi.Draining != 2 {
		t.Fatalf("QueueInfo while draining = %+v, want 4 partitions served and 2 draining", qi)
	}
	waitFor(t, 60*time.Second, "the drain to end", func() bool {
		qi, err := insp.QueueInfo(ctx, q)
		return err == nil && qi.Partitions == 2 && qi.Draining == 0
	})
	t.Logf("lowered to 2: the drain ended %v after SetPartitions", time.Since(lowered).Round(time.Millisecond))
	stopSampling()
	time.Sleep(500 * time.Millisecond) // producers go on over the forgotten partitions
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close

	out.mu.Lock()
	ids, late := out.ids, out.late
	out.mu.Unlock()
	mu.Lock()
	t.Logf("%d tasks enqueued, %d after lowering; runs per partition %v", len(ids), len(late), parts)
	mu.Unlock()
	for _, p := range late {
		if p >= 2 {
			t.Fatalf("a task enqueued after lowering went to partition %d", p)
		}
	}
	waitFor(t, 60*time.Second, "every task to run", func() bool { return h.total() >= len(ids) })
	time.Sleep(300 * time.Millisecond) // a second run would show now
	for _, id := range ids {
		if n := h.count(id); n != 1 {
			t.Fatalf("task %s ran %d times, want once", id, n)
		}
	}
	if h.total() != len(ids) {
		t.Fatalf("%d runs for %d tasks", h.total(), len(ids))
	}
	qi, err = insp.QueueInfo(ctx, q)
	must(t, err)
	if qi.Partitions != 2 || qi.Pending+qi.Active+qi.Scheduled+qi.Retry+qi.Dead+qi.Waiting != 0 {
		t.Fatalf("after the run: %+v, want 2 partitions holding nothing", qi)
	}
	for n := 2; n < 4; n++ {
		k := keys.For(qcfg.Prefix, q, n)
		res, err := script.Counts.Run(ctx, rdb, []string{k.First(), k.Last(), k.Active(), k.Scheduled(), k.Retry(), k.Dead(), k.Done(), k.Paused()},
			k.ShardPrefix(), k.ParkedCount(), k.StatsTotal("done"), k.StatsTotal("failed"), k.Tomb()).Slice()
		must(t, err)
		for j := range 5 {
			if res[j].(int64) != 0 {
				t.Fatalf("forgotten partition %d holds %v", n, res)
			}
		}
	}
	for _, s := range servers {
		waitFor(t, 10*time.Second, "the servers to stop serving partitions 2 and 3", func() bool { return s.engine.Widths()[q] == 2 })
	}
}

// sampleQueueInfo reads q's QueueInfo every 50ms until the returned func
// is called, and checks that what it counts (pending, parked, running,
// scheduled, retrying, dead, and succeeded ever) lies between the tasks
// acknowledged before the read and those acknowledged after it, give or
// take what is in flight: a batch per producer not yet acknowledged, a
// task per fetcher between its blocking move and its claim.
func sampleQueueInfo(t *testing.T, insp *queue.Inspector, q string, out *produced) func() {
	const slack = 2*4 + 2*4 // producers × batch, workers × partitions
	done := make(chan struct{})
	finished := make(chan struct{})
	acked := func() int64 {
		out.mu.Lock()
		defer out.mu.Unlock()
		return int64(len(out.ids))
	}
	go func() {
		defer close(finished)
		samples, worst, widest := 0, int64(0), 0
		defer func() { t.Logf("QueueInfo: %d samples, at most %d off the acknowledged count", samples, worst) }()
		for range 2000 { // bounded: 100s at most
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			lo := acked()
			qi, err := insp.QueueInfo(context.Background(), q)
			hi := acked()
			if err != nil {
				t.Errorf("QueueInfo: %v", err)
				return
			}
			if qi.Partitions < widest {
				// the drain ended: the forgotten partitions' counters of
				// tasks succeeded ever are no longer summed (see the
				// architecture doc); nothing else was left in them
				return
			}
			widest = qi.Partitions
			got := qi.Pending + qi.Waiting + qi.Active + qi.Scheduled + qi.Retry + qi.Dead + qi.SucceededTotal
			samples++
			worst = max(worst, lo-got, got-hi)
			if got < lo-slack || got > hi+slack {
				t.Errorf("QueueInfo over %d partitions counts %d tasks; %d to %d were acknowledged (%+v)", qi.Partitions, got, lo, hi, qi)
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TestRestartedWorkerFollowsTheLayout starts a worker whose configured
// partition count is older than the count an operator set: it registers
// the partitions the layout serves and splits its limit over all of them,
// so no partition is left without a quota and the quotas sum to the limit.
func TestRestartedWorkerFollowsTheLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	if err := b.insp.SetPartitions(ctx, "q", 4); err != nil {
		t.Fatal(err)
	}
	b.qcfg.Partitions = map[string]int{"q": 2}
	b.server(t, Config{Queues: map[string]int{"q": 1}, Concurrency: 4,
		Limits: map[string]queue.Limits{"q": {Concurrency: 4}}}, HandlerFunc(func(context.Context, *Task) error { return nil }))
	if n, err := b.rdb.HGet(ctx, keys.Queues(b.qcfg.Prefix), "q").Int(); err != nil || n != 4 {
		t.Fatalf("the registry counts %d partitions (%v), want the layout's 4", n, err)
	}
	sum := 0
	for part := range 4 {
		cq, err := b.rdb.HGet(ctx, keys.For(b.qcfg.Prefix, "q", part).Limits(), "cq").Int()
		if err != nil {
			t.Fatalf("partition %d has no concurrency quota: %v", part, err)
		}
		sum += cq
	}
	if sum > 4 {
		t.Fatalf("the quotas sum to %d, want at most the limit 4", sum)
	}
}
