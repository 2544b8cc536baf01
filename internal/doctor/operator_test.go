package doctor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestOperatorActionsAreClean: what the Inspector's actions leave is no
// violation: a pending task deleted by ID (its tombstone), dead tasks run
// again and then deleted, a purge, a scheduled task run now, a running
// task cancelled, a workflow cancelled, groups paused and weighed, and a
// queue's partitions lowered while it drains.
func TestOperatorActionsAreClean(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		if rep := r.audit(t, false); rep.Violations != 0 {
			t.Fatalf("after %s: %d violations:%s", step, rep.Violations, describe(rep))
		}
	}
	// with no worker: delete one pending task, purge another queue
	ids := r.enqueue(t, 10, "t")
	if err := r.insp.DeleteTask(ctx, "default", ids[3]); err != nil {
		t.Fatal(err)
	}
	check("DeleteTask of a pending task")
	r.enqueue(t, 5, "t", queue.In("purged"))
	r.enqueue(t, 5, "t", queue.In("purged"), queue.Group("g"))
	if _, err := r.insp.DeleteAllTasks(ctx, "purged", queue.StatePending); err != nil {
		t.Fatal(err)
	}
	check("DeleteAllTasks of pending tasks")
	sched := r.enqueue(t, 3, "t", queue.ProcessIn(time.Hour))
	if err := r.insp.RunTask(ctx, "default", sched[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.insp.DeleteTask(ctx, "default", sched[1]); err != nil {
		t.Fatal(err)
	}
	check("RunTask and DeleteTask of scheduled tasks")
	if err := r.insp.Pause(ctx, "default", "paused-g"); err != nil {
		t.Fatal(err)
	}
	if err := r.insp.SetGroupWeight(ctx, "default", "heavy", 3); err != nil {
		t.Fatal(err)
	}
	r.enqueue(t, 3, "t", queue.Group("paused-g"))
	r.enqueue(t, 6, "t", queue.Group("heavy"))
	check("a paused and a weighed group")

	// a worker: some tasks die, one is cancelled while it runs
	var dieNow, block atomic.Bool
	dieNow.Store(true)
	block.Store(true)
	started := make(chan string, 100)
	h := func(ctx context.Context, task *worker.Task) error {
		switch task.Type {
		case "doomed":
			if dieNow.Load() {
				return worker.SkipRetry(errors.New("no"))
			}
		case "long":
			if !block.Load() {
				return nil
			}
			started <- task.ID
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	stop := r.serve(t, h, "default", "purged")
	r.enqueue(t, 4, "doomed", queue.Retention(time.Hour))
	long := r.enqueue(t, 1, "long")
	if got := <-started; got != long[0] {
		t.Fatalf("started %s", got)
	}
	if err := r.insp.CancelTask(ctx, "default", long[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the dead tasks", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "default")
		return err == nil && qi.Dead == 5 && qi.Active == 0
	})
	check("dead and cancelled tasks")
	dieNow.Store(false)
	block.Store(false)
	if _, err := r.insp.RunAllTasks(ctx, "default", queue.StateDead); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the dead tasks run again", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "default")
		return err == nil && qi.Dead == 0 && qi.Pending+qi.Active == 0
	})
	check("RunAllTasks of dead tasks")
	if _, err := r.insp.DeleteAllTasks(ctx, "default", queue.StateSucceeded); err != nil {
		t.Fatal(err)
	}
	if _, err := r.insp.DeleteAllTasks(ctx, "default", queue.StateDead); err != nil {
		t.Fatal(err)
	}
	check("DeleteAllTasks of succeeded and dead tasks")

	// a workflow cancelled while its first node runs
	block.Store(true)
	w := queue.NewWorkflow()
	w.Add("a", queue.NewRawTask("long", []byte("a")))
	w.Add("b", queue.NewRawTask("t", []byte("b")), queue.After("a"))
	wf, err := r.client.EnqueueWorkflow(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := r.insp.CancelWorkflow(ctx, wf); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the workflow cancelled", func() bool {
		info, err := r.insp.GetWorkflow(ctx, wf)
		qi, err2 := r.insp.QueueInfo(ctx, "default")
		return err == nil && err2 == nil && info.State == queue.StateCancelled && qi.Active == 0
	})
	check("CancelWorkflow")

	// lower a queue's partitions while it has tasks: the closed one drains
	if err := r.insp.SetPartitions(ctx, "default", 3); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := r.client.Enqueue(ctx, queue.NewRawTask("t", []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	check("SetPartitions 3")
	if err := r.insp.SetPartitions(ctx, "default", 1); err != nil {
		t.Fatal(err)
	}
	check("SetPartitions 1")
	if err := r.insp.Resume(ctx, "default", "paused-g"); err != nil {
		t.Fatal(err)
	}
	if err := r.insp.DeleteTask(ctx, "default", sched[2]); err != nil {
		t.Fatal(err)
	}
	r.settled(t, "default", nil)
	stop()
	check("the drain")
}

// TestFeedCapsAreClean: feeds capped small (FeedSize 16, ShardSize 8)
// trim succeeded and dead tasks with their records while many more run,
// and the pending list spans many shards: nothing is reported.
func TestFeedCapsAreClean(t *testing.T) {
	r := newRig(t)
	r.cfg.FeedSize, r.cfg.ShardSize = 16, 8
	var err error
	if r.client, err = queue.NewClient(r.rdb, r.cfg); err != nil {
		t.Fatal(err)
	}
	r.enqueue(t, 60, "kept", queue.Retention(time.Hour))
	r.enqueue(t, 40, "doomed", queue.MaxRetry(0))
	r.enqueue(t, 20, "grouped", queue.Group("g1"), queue.Retention(time.Hour))
	if rep := r.audit(t, false); rep.Violations != 0 {
		t.Fatalf("pending over many shards: %d violations:%s", rep.Violations, describe(rep))
	}
	var runs counter
	stop := r.serve(t, func(ctx context.Context, task *worker.Task) error {
		runs.count(task.ID)
		if task.Type == "doomed" {
			return errors.New("no")
		}
		return nil
	}, "default")
	r.settled(t, "default", func() bool { return runs.total() == 120 })
	stop()
	if rep := r.audit(t, false); rep.Violations != 0 {
		t.Fatalf("after the run: %d violations:%s", rep.Violations, describe(rep))
	}
}
