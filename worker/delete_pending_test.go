package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// TestDeletePendingTask: a pending task deleted by ID leaves the counts,
// the listing and GetTask at once, and no worker ever runs it; the others
// run; the tombstones are gone once the dequeue reached them.
func TestDeletePendingTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := newRecorder(nil)
	b.server(t, Config{}, rec) // registers the queue
	must(t, b.insp.Pause(ctx, queue.DefaultQueue))
	var ids []string
	for range 5 {
		ids = append(ids, b.enqueue(t, queue.NewRawTask("t", nil)).ID)
	}
	waitFor(t, 5*time.Second, "five pending", func() bool {
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Pending == 5
	})
	for _, id := range []string{ids[1], ids[3]} {
		must(t, b.insp.DeleteTask(ctx, queue.DefaultQueue, id))
	}
	if err := b.insp.DeleteTask(ctx, queue.DefaultQueue, ids[1]); !errors.Is(err, queue.ErrNotFound) && !errors.Is(err, queue.ErrTaskState) {
		t.Fatalf("deleting it again: %v", err)
	}
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	page, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StatePending})
	must(t, err)
	if qi.Pending != 3 || len(page.Tasks) != 3 {
		t.Fatalf("after deleting two of five: pending %d, listed %d", qi.Pending, len(page.Tasks))
	}
	if _, err := b.insp.GetTask(ctx, queue.DefaultQueue, ids[1]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("GetTask of a deleted pending task: %v", err)
	}
	must(t, b.insp.Resume(ctx, queue.DefaultQueue))
	waitFor(t, 10*time.Second, "the three left to run", func() bool { return rec.total() == 3 })
	time.Sleep(200 * time.Millisecond)
	for _, id := range []string{ids[1], ids[3]} {
		if rec.count(id) != 0 {
			t.Fatalf("deleted task %s ran", id)
		}
	}
	for _, id := range []string{ids[0], ids[2], ids[4]} {
		if rec.count(id) != 1 {
			t.Fatalf("task %s ran %d times", id, rec.count(id))
		}
	}
	if n := b.rdb.SCard(ctx, keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0).Tomb()).Val(); n != 0 {
		t.Fatalf("%d tombstones left after the dequeue passed them", n)
	}
}

// TestDeleteActiveTaskRefused: a running task cannot be deleted (cancel it).
func TestDeleteActiveTaskRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	rec := newRecorder(func(ctx context.Context, _ *Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	b.server(t, Config{}, rec)
	info := b.enqueue(t, queue.NewRawTask("t", nil))
	waitFor(t, 5*time.Second, "running", func() bool { return rec.count(info.ID) == 1 })
	if err := b.insp.DeleteTask(ctx, queue.DefaultQueue, info.ID); !errors.Is(err, queue.ErrTaskState) {
		t.Fatalf("delete a running task: %v, want ErrTaskState", err)
	}
}
