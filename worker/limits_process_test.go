package worker

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestQueueLimitAcrossProcesses: three worker processes, queue limit 3,
// handlers that record when they start and stop. The most handlers running
// at once is exactly 3 and is reached. Killing a holder with SIGKILL keeps
// its slot taken until its lease expires (the limit is not exceeded
// meanwhile), then the slot comes back and every task completes.
func TestQueueLimitAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	k := recKeysFor(prefix)
	insp, err := queue.NewInspector(rdb, queue.Config{Prefix: prefix})
	must(t, err)
	client, err := queue.NewClient(rdb, queue.Config{Prefix: prefix})
	must(t, err)
	must(t, insp.SetLimits(ctx, "limited", queue.Limits{Concurrency: 3}))
	const lease = 2 * time.Second
	opts := childOpts{Addr: srv.Addr, Prefix: prefix, Queue: "limited", Concurrency: 4, Lease: lease,
		Heartbeat: 400 * time.Millisecond, Sleep: 150 * time.Millisecond, Handler: handleGauge}
	var kids []*child
	for i := range 3 {
		kids = append(kids, startChild(t, "w"+strconv.Itoa(i), opts))
	}
	for _, c := range kids {
		c.waitReady(t, rdb)
	}
	tasks := make([]*queue.Task, 80)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("t", nil)
	}
	_, err = client.EnqueueMany(ctx, tasks, queue.In("limited"))
	must(t, err)
	peak := func() int { n, _ := rdb.Get(ctx, k.peak()).Int(); return n }
	waitFor(t, 10*time.Second, "three running at once", func() bool { return peak() == 3 })

	// kill a process while it holds a slot: any of them (a worker whose
	// task just finished pops again at once, so one process may hold
	// every slot for a while)
	var victim *child
	waitFor(t, 5*time.Second, "a holder to kill", func() bool {
		running, _ := rdb.HGetAll(ctx, k.running()).Result()
		for _, c := range kids {
			for _, pid := range running {
				if pid == strconv.Itoa(c.pid) {
					victim = c
					return true
				}
			}
		}
		return false
	})
	killed := time.Now()
	killGauged(t, rdb, k, victim)
	// until the lease expires, the live handlers stay below the limit
	for time.Since(killed) < lease-400*time.Millisecond {
		if n := rdb.HLen(ctx, k.running()).Val(); n >= 3 {
			t.Fatalf("%d handlers running %v after a holder died, before its lease (%v) expired: its slot was reused early",
				n, time.Since(killed).Round(time.Millisecond), lease)
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, rdb.Set(ctx, k.peak(), 0, 0).Err())
	waitFor(t, 5*time.Second, "the slot back: three running again", func() bool { return peak() == 3 })
	waitFor(t, 30*time.Second, "every task", func() bool {
		qi, err := insp.QueueInfo(ctx, "limited")
		return err == nil && qi.Pending == 0 && qi.Active == 0
	})
	if p := peak(); p > 3 {
		t.Fatalf("peak %d after the slot came back, limit 3", p)
	}
	completions := hashInts(t, rdb, k.completions())
	if len(completions) != 80 {
		t.Fatalf("%d of 80 tasks completed", len(completions))
	}
}

// TestFleetWideLimitAcrossPartitions: a queue of 4 partitions (on one
// server, and on a 3-master cluster with them spread over every master)
// with a concurrency limit of 3 for the whole queue, three worker
// processes and one of them killed with SIGKILL mid-run: the most handlers
// ever running at once is 3, and it is reached. Then every task goes to
// one partition (one group): the quotas move there and 3 run at
// once again.
func TestFleetWideLimitAcrossPartitions(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testFleetWideLimit(t, fourPartitionRig(t, nil))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testFleetWideLimit(t, fourPartitionRig(t, redistest.StartCluster(t, 3)))
	})
}

// testFleetWideLimit is TestFleetWideLimitAcrossPartitions on r, a rig of
// 4 partitions.
func testFleetWideLimit(t *testing.T, r *rig) {
	ctx := context.Background()
	rdb, insp, client, fleet := r.rdb, r.insp, r.client, r.queue
	k := recKeysFor(r.qcfg.Prefix)
	must(t, insp.SetLimits(ctx, fleet, queue.Limits{Concurrency: 3}))
	opts := r.base
	opts.Concurrency, opts.Lease, opts.Heartbeat, opts.Sleep, opts.Handler = 4, 2*time.Second, 400*time.Millisecond, 100*time.Millisecond, handleGauge
	var kids []*child
	for i := range 3 {
		kids = append(kids, startChild(t, "w"+strconv.Itoa(i), opts))
	}
	for _, c := range kids {
		c.waitReady(t, rdb)
	}
	enqueue := func(n int, opts ...queue.Option) {
		tasks := make([]*queue.Task, n)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("t", nil)
		}
		_, err := client.EnqueueMany(ctx, tasks, append(opts, queue.In(fleet))...)
		must(t, err)
	}
	peak := func() int { n, _ := rdb.Get(ctx, k.peak()).Int(); return n }
	drained := func() bool {
		qi, err := insp.QueueInfo(ctx, fleet)
		return err == nil && qi.Pending == 0 && qi.Active == 0
	}

	enqueue(120)
	waitFor(t, 15*time.Second, "three running at once", func() bool { return peak() == 3 })
	killGauged(t, rdb, k, kids[1])
	waitFor(t, 60*time.Second, "every task", drained)
	if p := peak(); p > 3 {
		t.Fatalf("peak %d handlers at once over 4 partitions, fleet-wide limit 3", p)
	}

	// all the work in one partition: the quotas follow it
	must(t, rdb.Set(ctx, k.peak(), 0, 0).Err())
	enqueue(60, queue.Group("one-tenant"))
	waitFor(t, 15*time.Second, "three running at once in one partition", func() bool { return peak() == 3 })
	li, err := insp.LimitInfo(ctx, fleet)
	must(t, err)
	quotas, err := inspect.Quotas(ctx, insp, fleet)
	must(t, err)
	if li.Limits.Concurrency != 3 || len(quotas) != 4 {
		t.Fatalf("LimitInfo = %+v, quotas %+v; want the limit 3 and 4 partitions' quotas", li, quotas)
	}
	waitFor(t, 60*time.Second, "every task of the one partition", drained)
	if p := peak(); p > 3 {
		t.Fatalf("peak %d with all tasks in one partition, limit 3", p)
	}
	completions := hashInts(t, rdb, k.completions())
	if len(completions) != 180 {
		t.Fatalf("%d of 180 tasks completed", len(completions))
	}
}

// killGauged kills a child running the gauge handler with SIGKILL and
// forgets its handlers in the gauge, since they run no more (their slots
// stay taken in Redis until their leases expire).
func killGauged(t *testing.T, rdb redis.UniversalClient, k recKeys, victim *child) {
	t.Helper()
	victim.signal(t, syscall.SIGKILL)
	if !victim.waitExit(5 * time.Second) {
		t.Fatal("the victim did not die")
	}
	ctx := context.Background()
	running, _ := rdb.HGetAll(ctx, k.running()).Result()
	for task, pid := range running {
		if pid == strconv.Itoa(victim.pid) {
			rdb.HDel(ctx, k.running(), task)
		}
	}
}
