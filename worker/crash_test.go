package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestCrashSafety kills worker processes (SIGKILL, no shutdown) at each
// instant of DESIGN.md's crash-safety table while a healthy worker runs,
// and checks that no task is lost and that a task runs twice only where a
// killed worker's handler had started it.
//
// It runs on one Redis server and on a Redis Cluster of 3 masters with a
// replica each, with a queue of 3 partitions, one on each master.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	points := []string{crashAfterMove, crashAfterClaim, crashMidHandler, crashBeforeAck, crashWithAhead}
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		for _, point := range points {
			t.Run(point, func(t *testing.T) {
				t.Parallel()
				testCrashPoint(t, point, singleRig(t, "crash"))
			})
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartClusterWithReplicas(t, 3) // shared: each subtest has its own prefix
		for _, point := range points {
			t.Run(point, func(t *testing.T) {
				t.Parallel()
				testCrashPoint(t, point, clusterRig(t, cl))
			})
		}
	})
}

func testCrashPoint(t *testing.T, point string, b *rig) {
	total := 200
	if point == crashWithAhead {
		total = 600 // fed 60 at a time, so each partition has a backlog
	}
	qname := b.queue
	ctx := context.Background()
	k := recKeysFor(b.qcfg.Prefix)
	base := b.base
	base.Lease, base.Heartbeat, base.Sleep = 2*time.Second, 400*time.Millisecond, 20*time.Millisecond

	var ids []string
	enqueue := func(n int) {
		n = min(n, total-len(ids))
		if n <= 0 {
			return
		}
		tasks := make([]*queue.Task, n)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("crash", []byte(strconv.Itoa(len(ids)+i)))
		}
		infos, err := b.client.EnqueueMany(ctx, tasks, queue.In(qname))
		must(t, err)
		for _, info := range infos {
			ids = append(ids, info.ID)
		}
	}

	healthy := base
	healthy.Concurrency = 2
	h := startChild(t, "healthy", healthy)
	h.waitReady(t, b.rdb)

	// Two rounds: a child that dies at the crash point's Nth occurrence,
	// fed a few tasks at a time until it has died.
	crashAt := []int{2, 5}
	step, every := 10, 250*time.Millisecond
	if point == crashAfterMove {
		// The move happens only when a worker blocks on an empty queue:
		// trickle tasks onto idle workers.
		crashAt = []int{1, 3}
		step, every = 2, 150*time.Millisecond
	}
	if point == crashWithAhead {
		// leasing ahead needs a backlog: feed more at a time
		crashAt, step = []int{1, 2}, 60
	}
	var killed []*child
	for round, at := range crashAt {
		o := base
		o.Concurrency, o.Crash, o.CrashAt = 4, point, at
		if point == crashWithAhead {
			// quick handlers, many slots: a worker leases ahead only what
			// its handlers would start within a few milliseconds
			o.Sleep, o.Concurrency = 0, 8
		}
		kc := startChild(t, fmt.Sprintf("killer%d", round+1), o)
		kc.waitReady(t, b.rdb)
		if point == crashAfterMove {
			time.Sleep(1500 * time.Millisecond) // both workers block in a slice by now
		}
		deadline := time.Now().Add(15 * time.Second)
		for !kc.exited() {
			if time.Now().After(deadline) || len(ids) >= total-20 {
				t.Fatalf("round %d: the child never reached its crash point %s #%d (%d tasks enqueued)", round+1, point, at, len(ids))
			}
			enqueue(step)
			kc.waitExit(every)
		}
		if !kc.killedBySIGKILL() {
			t.Fatalf("round %d: the child exited with %s, want death by SIGKILL at %s:\n%s", round+1, kc.state(), point, kc.tail(40))
		}
		killed = append(killed, kc)
	}
	enqueue(total - len(ids))

	// On a timeout, go on: the checks below say which tasks are missing.
	if !eventually(40*time.Second, func() bool {
		n, err := b.rdb.HLen(ctx, k.completions()).Result()
		return err == nil && n >= int64(total)
	}) {
		t.Errorf("timed out after 40s waiting for every task to complete: %d of %d did", b.rdb.HLen(ctx, k.completions()).Val(), total)
	} else if !eventually(10*time.Second, func() bool {
		qi, err := b.insp.QueueInfo(ctx, qname)
		return err == nil && qi.Pending == 0 && qi.Active == 0
	}) {
		t.Errorf("timed out after 10s waiting for the queue to drain")
	}

	starts := hashInts(t, b.rdb, k.starts())
	completions := hashInts(t, b.rdb, k.completions())
	// Tasks a killed child's handler had started may run again.
	mayRepeat := map[string]bool{}
	for _, kc := range killed {
		for id := range members(t, b.rdb, k.started(kc.pid)) {
			mayRepeat[id] = true
		}
	}
	enqueued := map[string]bool{}
	repeats := 0
	var problems []string
	for _, id := range ids {
		enqueued[id] = true
		if completions[id] < 1 {
			problems = append(problems, fmt.Sprintf("task %s never completed (started %d times)", id, starts[id]))
		}
		if completions[id] > 1 || starts[id] > 1 {
			repeats++
			if !mayRepeat[id] {
				problems = append(problems, fmt.Sprintf("task %s started %d times and completed %d times, but no killed worker's handler had started it",
					id, starts[id], completions[id]))
			}
		}
	}
	for id := range starts {
		if !enqueued[id] {
			problems = append(problems, fmt.Sprintf("a handler ran task %s, which was never enqueued", id))
		}
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-i)
			break
		}
		t.Error(p)
	}

	switch point {
	case crashAfterMove, crashAfterClaim, crashWithAhead:
		// What the child held (in flight, or leased but not started, or
		// leased ahead of its free slots) when it died comes back through
		// the reaper or lease expiry, and runs exactly once.
		checked := 0
		for _, kc := range killed {
			held := members(t, b.rdb, k.held(kc.pid))
			if len(held) == 0 {
				t.Errorf("%s held no task when it died at %s", kc.name, point)
			}
			for id := range held {
				if mayRepeat[id] {
					continue // a handler had started it, in this child or an earlier one
				}
				checked++
				if starts[id] != 1 || completions[id] != 1 {
					t.Errorf("task %s, held by %s when it died at %s before any handler started it: started %d times, completed %d times; want exactly once",
						id, kc.name, point, starts[id], completions[id])
				}
			}
		}
		if checked == 0 {
			t.Errorf("no task held at a crash without having started: nothing shown for %s", point)
		}
	case crashMidHandler:
		for _, kc := range killed {
			id, err := b.rdb.Get(ctx, k.crashTask(kc.pid)).Result()
			must(t, err)
			if starts[id] < 2 || completions[id] < 1 {
				t.Errorf("task %s, whose handler died in %s: started %d times, completed %d; want it run again to completion",
					id, kc.name, starts[id], completions[id])
			}
		}
	case crashBeforeAck:
		for _, kc := range killed {
			again := 0
			for id := range members(t, b.rdb, k.done(kc.pid)) {
				if completions[id] >= 2 {
					again++
				}
			}
			if again == 0 {
				t.Errorf("%s died before an ack, yet no task it completed ran again: the unacknowledged task was lost or acked", kc.name)
			}
		}
	}

	qi, err := b.insp.QueueInfo(ctx, qname)
	must(t, err)
	if qi.Pending != 0 || qi.Active != 0 || qi.Retry != 0 || qi.Dead != 0 || qi.Scheduled != 0 {
		t.Errorf("queue at the end: %+v, want empty", qi)
	}
	t.Logf("%s: %d tasks, %d ran more than once", point, total, repeats)
	h.stop(t)
}

// TestStalledWorkerLosesLease (on one server, and on a cluster with a
// 3-partition queue) freezes a worker (SIGSTOP) past its lease
// while it runs a task: another worker's reaper requeues the expired lease
// and that worker runs the task. When the frozen worker resumes, its
// handler's context is cancelled with ErrLeaseLost, and the "success" it
// then returns is rejected by the fencing token: whether the new owner has
// finished the task by then (its record is gone) or still runs it (the
// lease is live under a newer token, which a late ack must not steal).
func TestStalledWorkerLosesLease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		resumeMidRerun bool // resume while the new owner's handler runs
	}{
		{"ResumeAfterRerun", false},
		{"ResumeDuringRerun", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testStalledWorker(t, tc.resumeMidRerun, singleRig(t, "stall"))
		})
	}
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartClusterWithReplicas(t, 3)
		testStalledWorker(t, true, clusterRig(t, cl))
	})
}

func testStalledWorker(t *testing.T, resumeMidRerun bool, b *rig) {
	qname := b.queue
	ctx := context.Background()
	k := recKeysFor(b.qcfg.Prefix)
	base := b.base
	base.Lease, base.Heartbeat = time.Second, 300*time.Millisecond

	ao := base
	ao.Concurrency, ao.Handler = 1, handleWaitLease
	a := startChild(t, "stalled", ao)
	a.waitReady(t, b.rdb)
	info, err := b.client.Enqueue(ctx, queue.NewRawTask("stall", []byte("x")), queue.In(qname))
	must(t, err)
	id := info.ID
	waitFor(t, 10*time.Second, "the first worker to start the task", func() bool {
		return b.rdb.SIsMember(ctx, k.started(a.pid), id).Val()
	})

	wo := base
	wo.Concurrency, wo.Handler = 2, handleGated
	w := startChild(t, "healthy", wo)
	w.waitReady(t, b.rdb)

	a.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	waitFor(t, 10*time.Second, "the healthy worker to reap the lease and start the task", func() bool {
		return b.rdb.SIsMember(ctx, k.started(w.pid), id).Val()
	})
	t.Logf("the healthy worker took the task over %v after the stall began", time.Since(stopped).Round(time.Millisecond))
	complete := func() {
		t.Helper()
		must(t, b.rdb.RPush(ctx, k.gate(id), "go").Err())
		waitFor(t, 10*time.Second, "the healthy worker to complete the task", func() bool {
			return b.rdb.HGet(ctx, k.completions(), id).Val() == "1"
		})
		waitFor(t, 10*time.Second, "the healthy worker's ack", func() bool {
			qi, err := b.insp.QueueInfo(ctx, qname)
			return err == nil && qi.Pending == 0 && qi.Active == 0
		})
	}
	if !resumeMidRerun {
		complete()
	}
	time.Sleep(time.Until(stopped.Add(3 * time.Second)))
	a.signal(t, syscall.SIGCONT)

	waitFor(t, 10*time.Second, "the resumed handler to see its context end", func() bool {
		return b.rdb.HExists(ctx, k.cause(), id).Val()
	})
	if cause := b.rdb.HGet(ctx, k.cause(), id).Val(); cause != ErrLeaseLost.Error() {
		t.Errorf("the stalled handler's context cause = %q, want %q", cause, ErrLeaseLost.Error())
	}
	waitFor(t, 10*time.Second, "the stalled worker to log its rejected ack", func() bool {
		return len(a.logged("WARN", "stale outcome rejected", map[string]string{"task": id})) > 0
	})
	if resumeMidRerun {
		if n := b.rdb.HGet(ctx, k.completions(), id).Val(); n != "" {
			t.Fatalf("the healthy worker completed the task (%s) before its gate opened", n)
		}
		complete()
	}
	time.Sleep(time.Second) // several heartbeats: room for a wrong requeue to run it a third time

	if n := b.rdb.HGet(ctx, k.starts(), id).Val(); n != "2" {
		t.Errorf("task started %s times, want 2 (the stalled worker, then the healthy one)", n)
	}
	if n := b.rdb.HGet(ctx, k.completions(), id).Val(); n != "1" {
		t.Errorf("task completed %s times, want 1", n)
	}
	if by, _ := b.rdb.HGet(ctx, k.completedBy(), id).Int(); by != w.pid {
		t.Errorf("task completed by pid %d, want the healthy worker %d", by, w.pid)
	}
	if got := w.logged("WARN", "stale outcome rejected", nil); len(got) > 0 {
		t.Errorf("the healthy worker's outcome was rejected: %v", got)
	}
	if _, err := b.insp.GetTask(ctx, qname, id); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("GetTask after the healthy ack: err = %v, want ErrTaskNotFound (done, no retention)", err)
	}
	qi, err := b.insp.QueueInfo(ctx, qname)
	must(t, err)
	if qi.Pending != 0 || qi.Active != 0 || qi.Retry != 0 || qi.Dead != 0 {
		t.Errorf("queue at the end: %+v, want empty", qi)
	}
	a.stop(t)
	w.stop(t)
}

// eventually polls cond until it holds (true) or timeout passes (false).
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
