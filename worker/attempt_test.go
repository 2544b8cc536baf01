package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestAttemptCountsEveryStart: Task.Attempt never repeats. A dead task run
// again with Inspector.RunTask starts at the next attempt number and gets
// that one attempt only (RetriesLeft 0): it goes back to dead if it
// fails, and a second RunTask gives it one more. Before, RunTask lowered
// the count, so a task with MaxRetry(0) ran as attempt 1 twice and a
// handler keying its side effects on the attempt saw a number again.
func TestAttemptCountsEveryStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type start struct{ attempt, left int }
	var mu sync.Mutex
	starts := map[string][]start{}
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		starts[task.ID] = append(starts[task.ID], start{task.Attempt, task.RetriesLeft()})
		n := len(starts[task.ID])
		mu.Unlock()
		if task.Type == "third-time-lucky" && n == 3 {
			return nil
		}
		return errors.New("failed")
	})
	b.server(t, Config{ForwardInterval: 20 * time.Millisecond,
		RetryDelay: func(int, error, *Task) time.Duration { return time.Millisecond }}, h)
	enqueue := func(typ string, maxRetry int) string {
		info, err := b.client.Enqueue(ctx, queue.NewRawTask(typ, nil), queue.MaxRetry(maxRetry), queue.Retention(time.Hour))
		must(t, err)
		return info.ID
	}
	waitState := func(id string, state queue.State, attempts int) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("task %s %s after %d attempts", id, state, attempts), func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, id)
			return err == nil && ti.State == state && ti.Attempts == attempts
		})
	}
	seen := func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(starts[id])
	}

	// MaxRetry(0): dead after attempt 1; run again, attempt 2 fails: dead;
	// run again, attempt 3 succeeds
	lucky := enqueue("third-time-lucky", 0)
	waitState(lucky, queue.StateDead, 1)
	must(t, b.insp.RunTask(ctx, queue.DefaultQueue, lucky))
	waitState(lucky, queue.StateDead, 2)
	must(t, b.insp.RunTask(ctx, queue.DefaultQueue, lucky))
	waitState(lucky, queue.StateSucceeded, 3)
	if got := seen(lucky); got != "[{1 0} {2 0} {3 0}]" {
		t.Errorf("MaxRetry(0) run again twice: starts {attempt, retries left} %s, want [{1 0} {2 0} {3 0}]", got)
	}

	// MaxRetry(1): attempts 1 and 2, dead; run again: attempt 3, its last
	failing := enqueue("always-fails", 1)
	waitState(failing, queue.StateDead, 2)
	must(t, b.insp.RunTask(ctx, queue.DefaultQueue, failing))
	waitState(failing, queue.StateDead, 3)
	if got := seen(failing); got != "[{1 1} {2 0} {3 0}]" {
		t.Errorf("MaxRetry(1) run again: starts %s, want [{1 1} {2 0} {3 0}]", got)
	}
}
