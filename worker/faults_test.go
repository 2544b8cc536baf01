package worker

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// TestRedisRestartWithAOF kills Redis (persisted with appendfsync always)
// in the middle of a run and restarts it: the worker processes ride it out
// on their own and every task completes. Tasks stream in a little slower
// than the workers run them, so at the kill handlers are running, fetchers
// are blocked on the empty queue, and heartbeats and acks are due. One
// worker's client has go-redis's default retries, which may hide a short
// outage; the other's has none, so its own loops meet every failed call.
//
// On a cluster (3 masters, no replicas, so nothing fails over) the master
// of one of the queue's 3 partitions is the one killed and restarted.
func TestRedisRestartWithAOF(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		b := singleRig(t, "aof", redistest.WithAOF())
		srv := b.srv
		testRedisRestart(t, b, srv)
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3, redistest.WithAOF())
		b := clusterRig(t, cl)
		testRedisRestart(t, b, cl.MasterOf(t, cl.Slot(t, keys.For(b.qcfg.Prefix, b.queue, 0).T)))
		cl.WaitHealthy(t)
	})
}

// testRedisRestart runs TestRedisRestartWithAOF on b, killing srv.
func testRedisRestart(t *testing.T, b *rig, srv *redistest.Server) {
	const total = 300
	qname := b.queue
	ctx := context.Background()
	k := recKeysFor(b.qcfg.Prefix)

	o := b.base
	o.Concurrency, o.Lease, o.Heartbeat, o.Sleep = 4, 4*time.Second, 500*time.Millisecond, 50*time.Millisecond
	noRetry := o
	noRetry.MaxRetries = -1
	children := []*child{startChild(t, "aof-retries", o), startChild(t, "aof-noretry", noRetry)}
	for _, c := range children {
		c.waitReady(t, b.rdb)
	}

	// The producer enqueues about 100 tasks a second, each with its own ID
	// so that an enqueue whose reply the outage lost can be retried safely.
	prodCtx, stopProducer := context.WithTimeout(ctx, 60*time.Second)
	defer stopProducer()
	produced := make(chan error, 1)
	go func() {
		for i := range total {
			id := fmt.Sprintf("aof-%03d", i)
			for {
				_, err := b.client.Enqueue(prodCtx, queue.NewRawTask("aof", []byte(id)), queue.In(qname), queue.TaskID(id))
				if err == nil || errors.Is(err, queue.ErrDuplicateTaskID) {
					break
				}
				if prodCtx.Err() != nil {
					produced <- fmt.Errorf("enqueue %s: %w", id, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			if i%5 == 4 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		produced <- nil
	}()

	completed := func() int64 {
		n, err := b.rdb.HLen(ctx, k.completions()).Result()
		if err != nil {
			return -1
		}
		return n
	}
	waitFor(t, 20*time.Second, "a third of the tasks to complete", func() bool { return completed() >= total/3 })
	before := completed()
	srv.Kill(t)
	time.Sleep(time.Second)
	srv.Restart(t)
	// a restarted cluster master may answer LOADING or CLUSTERDOWN for a
	// moment: read once it answers
	var after int64
	waitFor(t, 20*time.Second, "Redis to answer after the restart", func() bool { after = completed(); return after >= 0 })
	if before >= total {
		t.Fatalf("all %d tasks completed before Redis was killed: nothing shown", total)
	}
	if after < before {
		t.Fatalf("completions went from %d to %d across the restart: AOF lost acknowledged writes", before, after)
	}
	t.Logf("Redis killed with %d of %d tasks completed", before, total)
	doneAtRestart := map[*child]int64{}
	for _, c := range children {
		doneAtRestart[c] = b.rdb.SCard(ctx, k.done(c.pid)).Val()
	}

	select {
	case err := <-produced:
		must(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the producer did not finish within 60s")
	}
	waitFor(t, 60*time.Second, "every task to complete after the restart", func() bool { return completed() >= total })
	waitFor(t, 10*time.Second, "the queue to drain", func() bool {
		qi, err := b.insp.QueueInfo(ctx, qname)
		return err == nil && qi.Pending == 0 && qi.Active == 0
	})
	completions := hashInts(t, b.rdb, k.completions())
	for i := range total {
		if id := fmt.Sprintf("aof-%03d", i); completions[id] < 1 {
			t.Errorf("task %s never completed", id)
		}
	}
	qi, err := b.insp.QueueInfo(ctx, qname)
	must(t, err)
	if qi.Pending != 0 || qi.Active != 0 || qi.Retry != 0 || qi.Dead != 0 {
		t.Errorf("queue at the end: %+v, want empty", qi)
	}
	for _, c := range children {
		if c.exited() {
			t.Errorf("child %s died (%s); it should have ridden out the restart", c.name, c.state())
		}
		// Up to Concurrency tasks it had fetched before the kill may
		// complete after it; more means it fetched again.
		if n := b.rdb.SCard(ctx, k.done(c.pid)).Val(); n-doneAtRestart[c] <= int64(2*o.Concurrency) {
			t.Errorf("child %s completed %d tasks after the restart, want more than the %d it may have held: did it fetch again?",
				c.name, n-doneAtRestart[c], 2*o.Concurrency)
		}
	}
	if len(children[1].logged("WARN", "redis call failed", nil)) == 0 {
		t.Errorf("child %s, without go-redis retries, logged no failed Redis call: the outage was not shown to its loops", children[1].name)
	}
	for _, c := range children {
		c.stop(t)
	}
}

// flushPayload is what TestScriptFlushUnderLoad sends: Check is derived
// from Seq, so a handler can tell a payload that is not what was sent.
type flushPayload struct {
	Seq   int
	Check string
}

func flushCheck(seq int) string { return fmt.Sprintf("payload-%d-%x", seq, uint32(seq)*2654435761) }

// TestScriptFlushUnderLoad empties Redis's script cache every millisecond
// while producers enqueue and two workers run: no call fails, every handler
// gets exactly the task that was sent (never a dummy), every task runs once.
// Shards of four tasks keep the pending list's end pointers moving, and two
// workers compete for them.
func TestScriptFlushUnderLoad(t *testing.T) {
	t.Parallel()
	const qname = "flush"
	b := setup(t)
	ctx := context.Background()
	qcfg := b.qcfg
	qcfg.ShardSize = 4
	client, err := queue.NewClient(b.rdb, qcfg)
	must(t, err)

	var mu sync.Mutex
	seen := map[string]int{} // task ID -> Seq its handler got
	runs := map[string]int{} // task ID -> runs
	var bad []string         // what handlers got that was not sent
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		var p flushPayload
		err := task.Decode(&p)
		mu.Lock()
		defer mu.Unlock()
		runs[task.ID]++
		switch {
		case task.Type != "flush":
			bad = append(bad, fmt.Sprintf("task %s of type %q", task.ID, task.Type))
		case err != nil:
			bad = append(bad, fmt.Sprintf("task %s: %v", task.ID, err))
		case p.Check != flushCheck(p.Seq):
			bad = append(bad, fmt.Sprintf("task %s: payload %+v", task.ID, p))
		default:
			seen[task.ID] = p.Seq
		}
		return nil
	})
	for range 2 {
		rdb := b.srv.Client(t)
		cfg := Config{Queues: map[string]int{qname: 1}, Concurrency: 4,
			Lease: 3 * time.Second, Heartbeat: 200 * time.Millisecond}
		cfg.Config = qcfg
		cfg.Logger = testLogger(t)
		startServer(t, rdb, cfg, h)
	}

	// The flusher empties the script cache every millisecond. While the
	// producers run it also pushes a dummy onto the head of the pending
	// list's first shard now and then, as the blocking-pop helper does to
	// wake a reader, so readers meet dummies whether or not the helper ran.
	flusher := b.srv.Client(t)
	k := keys.For(qcfg.Prefix, qname, 0)
	var injecting atomic.Bool
	injecting.Store(true)
	stopFlush := make(chan struct{})
	var flushes, dummies atomic.Int64
	var flushErr atomic.Value
	flushDone := make(chan struct{})
	go func() {
		defer close(flushDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopFlush:
				return
			case <-tick.C:
			}
			if err := flusher.ScriptFlush(ctx).Err(); err != nil {
				flushErr.Store(err)
				return
			}
			flushes.Add(1)
			if i%10 == 0 && injecting.Load() {
				err := flusher.Eval(ctx, "return redis.call('LPUSH', ARGV[1] .. (redis.call('GET', KEYS[1]) or '0'), ARGV[2])",
					[]string{k.First()}, k.ShardPrefix(), script.Dummy).Err()
				if err != nil {
					flushErr.Store(err)
					return
				}
				dummies.Add(1)
			}
		}
	}()
	defer func() { close(stopFlush); <-flushDone }()

	const producers, rounds, batch = 3, 15, 10
	var sent sync.Map // task ID -> Seq
	var seq atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers*rounds*2)
	for range producers {
		wg.Go(func() {
			for r := range rounds {
				tasks := make([]*queue.Task, batch)
				seqs := make([]int, batch)
				for i := range tasks {
					seqs[i] = int(seq.Add(1))
					var err error
					tasks[i], err = queue.NewTask("flush", flushPayload{Seq: seqs[i], Check: flushCheck(seqs[i])})
					if err != nil {
						errs <- err
						return
					}
				}
				infos, err := client.EnqueueMany(ctx, tasks, queue.In(qname))
				if err != nil {
					errs <- fmt.Errorf("EnqueueMany: %w", err)
					continue
				}
				for i, info := range infos {
					sent.Store(info.ID, seqs[i])
				}
				one := int(seq.Add(1))
				task, _ := queue.NewTask("flush", flushPayload{Seq: one, Check: flushCheck(one)})
				info, err := client.Enqueue(ctx, task, queue.In(qname))
				if err != nil {
					errs <- fmt.Errorf("Enqueue: %w", err)
					continue
				}
				sent.Store(info.ID, one)
				time.Sleep(time.Duration(5+5*(r%3)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	injecting.Store(false)
	close(errs)
	for err := range errs {
		t.Errorf("enqueue under SCRIPT FLUSH: %v", err)
	}
	want := 0
	sent.Range(func(any, any) bool { want++; return true })

	waitFor(t, 20*time.Second, "every task to be handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) >= want || len(bad) > 0
	})
	waitFor(t, 10*time.Second, "the queue to drain", func() bool {
		qi, err := b.insp.QueueInfo(ctx, qname)
		return err == nil && qi.Pending == 0 && qi.Active == 0
	})
	if err, _ := flushErr.Load().(error); err != nil {
		t.Fatalf("SCRIPT FLUSH failed: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, s := range bad {
		t.Errorf("a handler got what was not sent: %s", s)
	}
	sent.Range(func(key, value any) bool {
		id := key.(string)
		if runs[id] != 1 {
			t.Errorf("task %s ran %d times, want once", id, runs[id])
		} else if seen[id] != value.(int) {
			t.Errorf("task %s: handler got payload seq %d, sent %d", id, seen[id], value.(int))
		}
		return true
	})
	for id := range runs {
		if _, ok := sent.Load(id); !ok {
			t.Errorf("a handler ran task %s, which was never enqueued", id)
		}
	}
	qi, err := b.insp.QueueInfo(ctx, qname)
	must(t, err)
	if qi.Pending != 0 || qi.Active != 0 || qi.Retry != 0 || qi.Dead != 0 {
		t.Errorf("queue at the end: %+v, want empty (a dummy leased as a task would be dead)", qi)
	}
	if n := flushes.Load(); n < 50 {
		t.Errorf("only %d SCRIPT FLUSHes ran during the test, want the cache emptied constantly", n)
	}
	t.Logf("%d tasks, %d SCRIPT FLUSHes, %d dummies pushed", want, flushes.Load(), dummies.Load())
}

// TestRedisAtMemoryLimit fills Redis to maxmemory (noeviction) until
// Enqueue fails with ErrRedisOutOfMemory; a worker started then still
// runs, and drains the whole queue without losing a task.
//
// On a cluster every master has the limit; the queue's 3 partitions, one
// on each master, fill in turn, and the first full one refuses.
func TestRedisAtMemoryLimit(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testMemoryLimit(t, singleRig(t, "oom", redistest.WithMaxMemory(20<<20)))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testMemoryLimit(t, clusterRig(t, redistest.StartCluster(t, 3, redistest.WithMaxMemory(20<<20))))
	})
}

// testMemoryLimit runs TestRedisAtMemoryLimit on b.
func testMemoryLimit(t *testing.T, b *rig) {
	qname := b.queue
	ctx := context.Background()
	payload := make([]byte, 8<<10)
	_, _ = crand.Read(payload) // incompressible: stored at its size

	enqueued := map[string]bool{}
	var oom error
	for len(enqueued) < 20_000 {
		info, err := b.client.Enqueue(ctx, queue.NewRawTask("oom", payload), queue.In(qname))
		if err != nil {
			oom = err
			break
		}
		enqueued[info.ID] = true
	}
	if !errors.Is(oom, queue.ErrRedisOutOfMemory) {
		t.Fatalf("after %d tasks, Enqueue err = %v, want ErrRedisOutOfMemory", len(enqueued), oom)
	}
	t.Logf("Redis full after %d tasks of 8 KiB", len(enqueued))

	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	rec := newRecorder(func(ctx context.Context, task *Task) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	cfg := Config{Config: b.qcfg, Queues: map[string]int{qname: 1}, Concurrency: 10,
		Lease: 5 * time.Second, Heartbeat: 500 * time.Millisecond}
	cfg.Logger = testLogger(t)
	s, err := NewServer(b.rdb, cfg, rec)
	must(t, err)
	must(t, s.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	})

	// Handlers hold their tasks until the gate opens: nothing was freed yet.
	// One enqueue per partition (round robin): the full one refuses.
	refused := false
	for range max(b.qcfg.Partitions[qname], 1) {
		info, err := b.client.Enqueue(ctx, queue.NewRawTask("oom", payload), queue.In(qname))
		switch {
		case err == nil:
			enqueued[info.ID] = true
		case errors.Is(err, queue.ErrRedisOutOfMemory):
			refused = true
		default:
			t.Fatalf("Enqueue right after the worker started: %v", err)
		}
	}
	if !refused {
		t.Fatalf("Enqueue right after the worker started: no partition refused, want ErrRedisOutOfMemory")
	}
	open()

	waitFor(t, 30*time.Second, "the worker to drain the full queue", func() bool {
		qi, err := b.insp.QueueInfo(ctx, qname)
		return err == nil && qi.Pending == 0 && qi.Active == 0
	})
	rec.mu.Lock()
	ran := map[string]int{}
	for id, n := range rec.runs {
		ran[id] = n
	}
	rec.mu.Unlock()
	for id := range enqueued {
		if ran[id] != 1 {
			t.Errorf("task %s ran %d times, want once", id, ran[id])
		}
	}
	if len(ran) != len(enqueued) {
		t.Errorf("handlers ran %d distinct tasks, %d were enqueued", len(ran), len(enqueued))
	}
	qi, err := b.insp.QueueInfo(ctx, qname)
	must(t, err)
	if qi.Retry != 0 || qi.Dead != 0 {
		t.Errorf("queue at the end: %+v, want empty", qi)
	}
	// Drained, Redis has room again.
	if _, err := b.client.Enqueue(ctx, queue.NewRawTask("oom", payload), queue.In(qname)); err != nil {
		t.Errorf("Enqueue after the queue drained: %v", err)
	}
}

// TestStalledRedisLosesNoAttempt freezes Redis (SIGSTOP) past the
// worker client's read timeout while the worker is busy: the pops it sends
// meanwhile time out, yet Redis runs them when it resumes, leasing tasks
// to the worker whose replies never arrive. The worker finds those leases
// after its next answered call and gives them back: every task runs, none
// goes dead for want of attempts (MaxRetry 0), and none waits out its
// 30 s lease. (Before, such tasks died with "attempts exhausted" without
// ever running.)
func TestStalledRedisLosesNoAttempt(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		opts := b.srv.Options()
		opts.ReadTimeout, opts.WriteTimeout, opts.MaxRetries = 200*time.Millisecond, 200*time.Millisecond, -1
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		r := &rig{rdb: b.rdb, client: b.client, insp: b.insp, qcfg: b.qcfg, queue: queue.DefaultQueue}
		testStalledRedis(t, r, rdb, func() { b.srv.Pause(t) }, func() { b.srv.Resume(t) })
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		// no replicas: a frozen master is not failed over
		cl := redistest.StartCluster(t, 3)
		r := clusterRig(t, cl)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(),
			ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
		rdb.AddHook(rcall.RerouteHook{Client: rdb})
		t.Cleanup(func() { _ = rdb.Close() })
		victim := cl.MasterOf(t, cl.Slot(t, keys.For(r.qcfg.Prefix, r.queue, 0).T))
		testStalledRedis(t, r, rdb, func() { victim.Pause(t) }, func() { victim.Resume(t) })
	})
}

// testStalledRedis runs TestStalledRedisLosesNoAttempt on b, the worker
// reading through rdb (short timeouts, no retries), Redis frozen by pause.
func testStalledRedis(t *testing.T, b *rig, rdb redis.UniversalClient, pause, resume func()) {
	const total = 400
	ctx := context.Background()
	for i := 0; i < total; i += 100 {
		tasks := make([]*queue.Task, 100)
		for j := range tasks {
			tasks[j] = queue.NewRawTask("t", []byte(fmt.Sprint(i+j)))
		}
		if _, err := b.client.EnqueueMany(ctx, tasks, queue.MaxRetry(0), queue.In(b.queue)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	ran := map[string]int{}
	var logs syncBuffer
	cfg := Config{Config: b.qcfg, Queues: map[string]int{b.queue: 1}, Concurrency: 8, Lease: 30 * time.Second}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		ran[task.ID]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return nil
	})
	// rdb's 200ms timeouts are for the pause; on a busy machine a script
	// load at Start may meet one before it, which Start reports: start
	// another server then, as an operator would
	var s *Server
	for try := 1; ; try++ {
		var err error
		s, err = NewServer(rdb, cfg, h)
		must(t, err)
		err = s.Start(ctx)
		if err == nil {
			break
		}
		var ne net.Error
		if try == 5 || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("worker start, try %d: %v", try, err)
		}
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	})
	waitFor(t, 10*time.Second, "the first tasks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) >= 40
	})
	pause()
	time.Sleep(1500 * time.Millisecond) // several pops time out meanwhile
	resume()

	// well inside the 30 s lease: a task left to the reaper would not make it
	waitFor(t, 15*time.Second, "every task done", func() bool {
		qi, err := b.insp.QueueInfo(ctx, b.queue)
		return err == nil && qi.Pending+qi.Active+qi.Retry+qi.Scheduled == 0
	})
	qi, err := b.insp.QueueInfo(ctx, b.queue)
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if qi.Dead != 0 || len(ran) != total {
		t.Fatalf("%d of %d tasks ran, %d dead; want all run, none dead\nlog:\n%s", len(ran), total, qi.Dead, logs.Bytes())
	}
	// one worker, 30 s leases: no lease was taken over, so no outcome is
	// reported stale; acks whose reply the stall lost are merely resent
	out := string(logs.Bytes())
	if strings.Contains(out, "stale outcome rejected") {
		t.Errorf("a resent outcome was reported as taken over:\n%s", out)
	}
	if !strings.Contains(out, "redis calls succeed again") {
		t.Errorf("the end of the outage was not logged:\n%s", out)
	}
	if !strings.Contains(out, "a reply that never came back had leased tasks to this worker") {
		t.Logf("no pop reply was lost this time (the stall hit between pops):\n%s", out)
	}
}
