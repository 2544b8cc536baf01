package queue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

func TestRunAndDeleteTasks(t *testing.T) {
	t.Parallel()
	s := setupStates(t)

	t.Run("RunOneOfEachState", func(t *testing.T) {
		for _, id := range []string{s.scheduled[0], s.retry[0], s.dead[0]} {
			must(t, s.insp.RunTask(s.ctx, s.q, id))
		}
		qi := s.waitCounts(t, s.q, "three more pending", func(qi *queue.QueueInfo) bool { return qi.Pending == 10 })
		if qi.Scheduled != 5 || qi.Retry != 3 || qi.Dead != 4 {
			t.Fatalf("after RunTask: %+v", qi)
		}
		pending := s.listAll(t, queue.TaskQuery{Queue: s.q, State: queue.StatePending, Limit: 20})
		tail := ids(pending[7:])
		if fmt.Sprint(tail) != fmt.Sprint([]string{s.scheduled[0], s.retry[0], s.dead[0]}) {
			t.Fatalf("run tasks not at the tail: %v", ids(pending))
		}
		// the dead task kept its record: attempts, last error
		if pending[9].Attempts != 1 || pending[9].LastError == "" || pending[9].State != queue.StatePending {
			t.Fatalf("run dead task %+v", pending[9])
		}
		// the scheduled task never ran: no record
		if pending[7].Attempts != 0 || pending[7].LastError != "" {
			t.Fatalf("run scheduled task %+v", pending[7])
		}
	})

	t.Run("WrongState", func(t *testing.T) {
		for name, err := range map[string]error{
			"run pending": s.insp.RunTask(s.ctx, s.q, s.pending[0]),
			"run active":  s.insp.RunTask(s.ctx, s.q, s.active[0]),
			// (a pending task can be deleted: worker.TestDeletePendingTask)
			"delete active":  s.insp.DeleteTask(s.ctx, s.q, s.active[0]),
			"cancel pending": s.insp.CancelTask(s.ctx, s.q, s.pending[0]),
		} {
			if !errors.Is(err, queue.ErrTaskState) {
				t.Errorf("%s: err = %v, want ErrTaskState", name, err)
			}
		}
		if err := s.insp.RunTask(s.ctx, s.q, "nope"); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("run unknown: err = %v", err)
		}
		if _, err := s.insp.RunAllTasks(s.ctx, s.q, queue.StateSucceeded); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("run all done: err = %v", err)
		}
		if _, err := s.insp.DeleteAllTasks(s.ctx, s.q, queue.StateActive); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("delete all active: err = %v", err)
		}
	})

	t.Run("DeleteOne", func(t *testing.T) {
		for _, id := range []string{s.scheduled[1], s.retry[1], s.dead[1], s.done[0]} {
			must(t, s.insp.DeleteTask(s.ctx, s.q, id))
			if _, err := s.insp.GetTask(s.ctx, s.q, id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("deleted task %s: GetTask err = %v", id, err)
			}
		}
		if err := s.insp.DeleteTask(s.ctx, s.q, s.dead[1]); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("deleting twice: err = %v", err)
		}
		qi, err := s.insp.QueueInfo(s.ctx, s.q)
		must(t, err)
		if qi.Scheduled != 4 || qi.Retry != 2 || qi.Dead != 3 || qi.Succeeded != 1 {
			t.Fatalf("after DeleteTask: %+v", qi)
		}
	})

	t.Run("AllOfAState", func(t *testing.T) {
		n, err := s.insp.RunAllTasks(s.ctx, s.q, queue.StateRetry)
		must(t, err)
		if n != 2 {
			t.Fatalf("RunAllTasks(retry) = %d, want 2", n)
		}
		n, err = s.insp.DeleteAllTasks(s.ctx, s.q, queue.StateDead)
		must(t, err)
		if n != 3 {
			t.Fatalf("DeleteAllTasks(dead) = %d, want 3", n)
		}
		n, err = s.insp.DeleteAllTasks(s.ctx, s.q, queue.StateScheduled)
		must(t, err)
		qi, err := s.insp.QueueInfo(s.ctx, s.q)
		must(t, err)
		if n != 4 || qi.Scheduled != 0 || qi.Retry != 0 || qi.Dead != 0 || qi.Pending != 12 {
			t.Fatalf("deleted %d scheduled; then %+v", n, qi)
		}
	})
}

// TestRunAllInBatches: thousands of tasks over partitions move in bounded
// batches, and none is left.
func TestRunAllInBatches(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{Partitions: map[string]int{"big": 2}})
	b.enqueue(t, 2345, typeOK, queue.In("big"), queue.ProcessIn(time.Hour))
	must(t, script.LoadAll(b.ctx, b.rdb))
	b.calls.reset()
	n, err := b.insp.RunAllTasks(b.ctx, "big", queue.StateScheduled)
	must(t, err)
	rt := b.calls.roundTrips.Load()
	qi, err := b.insp.QueueInfo(b.ctx, "big")
	must(t, err)
	if n != 2345 || qi.Scheduled != 0 || qi.Pending != 2345 {
		t.Fatalf("moved %d; then %+v", n, qi)
	}
	// 1 registry read, 1 ZCARD round, then 2 round trips per batch of up
	// to 500 per partition: 3 batches
	if rt != 2+2*3 {
		t.Fatalf("RunAllTasks took %d round trips", rt)
	}
}

// TestRunDeadGetsOneMoreAttempt: a dead task whose retries are spent runs
// once more when run by hand, and goes back to dead when that fails.
func TestRunDeadGetsOneMoreAttempt(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	w := b.worker(t, "q")
	id := b.enqueue(t, 1, typeFail, queue.In("q"), queue.MaxRetry(0))[0]
	b.waitCounts(t, "q", "dead", func(qi *queue.QueueInfo) bool { return qi.Dead == 1 })
	must(t, b.insp.RunTask(b.ctx, "q", id))
	b.waitCounts(t, "q", "dead again", func(qi *queue.QueueInfo) bool { return qi.Dead == 1 && qi.Pending == 0 && qi.Active == 0 })
	if n := w.fails.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2", n)
	}
	ti, err := b.insp.GetTask(b.ctx, "q", id)
	must(t, err)
	// the attempts count every start: 2, not the 1 a reset would show
	if ti.State != queue.StateDead || ti.Attempts != 2 || ti.LastError != "failed" {
		t.Fatalf("task after its extra attempt: %+v", ti)
	}
}

// TestDeleteReleasesUniqueLock: deleting a scheduled unique task frees
// its key for a new task.
func TestDeleteReleasesUniqueLock(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	opts := []queue.Option{queue.In("q"), queue.Unique(time.Hour), queue.ProcessIn(time.Hour)}
	id := b.enqueue(t, 1, typeOK, opts...)[0]
	if _, err := b.client.Enqueue(b.ctx, queue.NewRawTask(typeOK, []byte(typeOK)), opts...); !errors.Is(err, queue.ErrDuplicateUniqueTask) {
		t.Fatalf("second unique task: err = %v", err)
	}
	must(t, b.insp.DeleteTask(b.ctx, "q", id))
	if _, err := b.client.Enqueue(b.ctx, queue.NewRawTask(typeOK, []byte(typeOK)), opts...); err != nil {
		t.Fatalf("unique task after delete: %v", err)
	}
}

func TestCancelTask(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{Partitions: map[string]int{"q": 2}})
	b.worker(t, "q")
	active := b.enqueue(t, 2, typeBlock, queue.In("q"))
	b.waitCounts(t, "q", "active", func(qi *queue.QueueInfo) bool { return qi.Active == 2 })
	for _, id := range active {
		if ti, err := b.insp.GetTask(b.ctx, "q", id); err != nil || ti.CancelRequested {
			t.Fatalf("GetTask before any cancel = %+v, %v; want CancelRequested false", ti, err)
		}
		must(t, b.insp.CancelTask(b.ctx, "q", id))
		ti, err := b.insp.GetTask(b.ctx, "q", id)
		must(t, err)
		if !ti.CancelRequested {
			t.Fatalf("cancel of %s not recorded", id)
		}
	}
	if err := b.insp.CancelTask(b.ctx, "q", "nope"); !errors.Is(err, queue.ErrTaskState) {
		t.Fatalf("cancel unknown: err = %v", err)
	}
}

// TestDeleteAllPending empties a backlog spread over partitions and
// list shards: every pending task goes, with the uniqueness locks they
// held (the same unique task can be enqueued again), while the other
// queue is untouched; a second call finds nothing.
func TestDeleteAllPending(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{ShardSize: 100, Partitions: map[string]int{"big": 3}})
	const n = 2500 // several batches of 500, several shards per partition
	b.enqueue(t, n, "t", queue.In("big"))
	uniq, err := b.client.Enqueue(b.ctx, queue.NewRawTask("u", []byte("once")), queue.In("big"), queue.Unique(time.Hour))
	must(t, err)
	// the script finds the lock's key by skipping the message's earlier
	// fields: payloads of every length header, integers of every width
	odd := []*queue.Task{
		queue.NewRawTask("u", make([]byte, 300), queue.UniqueBy("bin16", time.Hour), queue.MaxRetry(200), queue.Timeout(time.Hour)),
		queue.NewRawTask("u", make([]byte, 70_000), queue.UniqueBy("bin32", time.Hour), queue.Deadline(time.Now().Add(time.Hour))),
		queue.NewRawTask("u", nil, queue.UniqueBy("k-"+strings.Repeat("x", 40), time.Hour), queue.Retention(100*time.Hour)),
	}
	_, err = b.client.EnqueueMany(b.ctx, odd, queue.In("big"))
	must(t, err)
	other := b.enqueue(t, 7, "t", queue.In("other"))

	deleted, err := b.insp.DeleteAllTasks(b.ctx, "big", queue.StatePending)
	must(t, err)
	if deleted != n+1+int64(len(odd)) {
		t.Fatalf("deleted %d pending tasks, want %d", deleted, n+1+len(odd))
	}
	if _, err := b.client.EnqueueMany(b.ctx, odd, queue.In("big")); err != nil {
		t.Fatalf("a deleted task's custom uniqueness ID was kept: %v", err)
	}
	if _, err := b.insp.DeleteAllTasks(b.ctx, "big", queue.StatePending); err != nil {
		t.Fatal(err)
	}
	qi, err := b.insp.QueueInfo(b.ctx, "big")
	must(t, err)
	if qi.Pending != 0 {
		t.Fatalf("after the purge: %+v", qi)
	}
	if _, err := b.insp.GetTask(b.ctx, "big", uniq.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a deleted task is still found: %v", err)
	}
	if _, err := b.client.Enqueue(b.ctx, queue.NewRawTask("u", []byte("once")), queue.In("big"), queue.Unique(time.Hour)); err != nil {
		t.Fatalf("the deleted unique task's lock was kept: %v", err)
	}
	if qi, _ := b.insp.QueueInfo(b.ctx, "other"); qi.Pending != int64(len(other)) {
		t.Fatalf("the other queue lost tasks: %+v", qi)
	}
	if deleted, err := b.insp.DeleteAllTasks(b.ctx, "big", queue.StatePending); err != nil || deleted != 1 {
		t.Fatalf("second purge: %d, %v; want the 1 task enqueued since", deleted, err)
	}
	if _, err := b.insp.DeleteAllTasks(b.ctx, "a b", queue.StatePending); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("bad queue name: %v", err)
	}
}
