package queuetest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/queuetest"
	"github.com/shardq/shardq/worker"
)

// Welcome is the payload of the code under test below.
type Welcome struct{ To string }

// signup is "the user's code": it enqueues a welcome email now and a
// reminder tomorrow.
func signup(ctx context.Context, c *queue.Client, to string) error {
	now, err := queue.NewTask("email:welcome", Welcome{To: to})
	if err != nil {
		return err
	}
	later, err := queue.NewTask("email:reminder", Welcome{To: to})
	if err != nil {
		return err
	}
	if _, err = c.Enqueue(ctx, now, queue.In("email")); err != nil {
		return err
	}
	_, err = c.Enqueue(ctx, later, queue.In("email"), queue.ProcessIn(24*time.Hour), queue.TaskID("reminder-"+to))
	return err
}

// TestSignupEnqueuesAndRetries is written as a user would: assert what
// the code enqueued, then drain the queue through a handler that fails
// twice before it succeeds, with no sleeping: the retries' backoff and the
// reminder scheduled a day ahead run at once, the clock moved forward.
func TestSignupEnqueuesAndRetries(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	if err := signup(ctx, env.Client, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	env.RequireEnqueued(t, "email", "email:welcome", func(ti *queue.TaskInfo) bool {
		var w Welcome
		return ti.Decode(&w) == nil && w.To == "ann@example.com"
	})
	reminder := env.RequireEnqueued(t, "email", "email:reminder", func(ti *queue.TaskInfo) bool {
		return ti.State == queue.StateScheduled
	})
	if until := time.Until(reminder.NextProcessAt); until < 23*time.Hour {
		t.Fatalf("reminder due in %v, want a day", until)
	}

	attempts := map[string]int{}
	mux := worker.NewMux()
	mux.Handle("email:welcome", worker.Typed(func(ctx context.Context, task *worker.Task, w Welcome) error {
		attempts[task.ID]++
		if task.Attempt <= 2 {
			return errors.New("smtp busy") // retried with the default backoff
		}
		return nil
	}))
	mux.Handle("email:reminder", worker.Typed(func(ctx context.Context, task *worker.Task, w Welcome) error {
		attempts[task.ID]++
		return nil
	}))
	start := time.Now()
	res := env.Drain(t, mux, "email")
	if res.Done != 2 || res.Dead != 0 || res.Runs != 4 {
		t.Fatalf("drain: %+v, want 2 done in 4 runs (the welcome in 3 attempts, the reminder)", res)
	}
	if res.Advanced < 24*time.Hour {
		t.Fatalf("the clock moved %v, want past the day-ahead reminder", res.Advanced)
	}
	if real := time.Since(start); real > 30*time.Second {
		t.Fatalf("draining took %v of real time: it should not wait out the backoff", real)
	}
	if left, _ := env.Enqueued(ctx, "email"); len(left) != 0 {
		t.Fatalf("%d tasks left", len(left))
	}
}

// TestDrainDeadTask: a task that never succeeds ends dead once its
// retries are spent, still without waiting.
func TestDrainDeadTask(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	if _, err := env.Client.Enqueue(ctx, queue.NewRawTask("flaky", nil), queue.MaxRetry(3)); err != nil {
		t.Fatal(err)
	}
	res := env.Drain(t, worker.HandlerFunc(func(context.Context, *worker.Task) error { return errors.New("no") }))
	if res.Runs != 4 || res.Dead != 1 {
		t.Fatalf("drain: %+v, want 4 runs and one dead", res)
	}
}

// TestAlbumBatchCallback is written as a user would: the code under test
// resizes an album's photos in a batch whose success callback publishes
// the album; one Drain runs the members and then the callback, once.
func TestAlbumBatchCallback(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	publish, err := queue.NewTask("album:publish", Welcome{To: "album-7"})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := env.Client.NewBatch(ctx, queue.OnSuccess(publish))
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		if _, err := batch.Add(ctx, queue.NewRawTask("photo:resize", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // Drain runs handlers concurrently
	var resized, published int
	res := env.Drain(t, worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		mu.Lock()
		defer mu.Unlock()
		switch task.Type {
		case "photo:resize":
			resized++
		case "album:publish":
			if resized != 12 {
				t.Errorf("published after %d of 12 photos", resized)
			}
			published++
		}
		return nil
	}))
	if resized != 12 || published != 1 || res.Done != 13 {
		t.Fatalf("resized %d, published %d, drain %+v", resized, published, res)
	}
	info, err := env.Inspector.GetBatch(ctx, batch.ID())
	if err != nil || !info.Finished || info.Succeeded != 12 {
		t.Fatalf("batch: %+v, %v", info, err)
	}
}
