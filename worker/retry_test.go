package worker

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestRetryForever: MaxRetry(math.MaxInt) and MaxRetry(math.MaxInt32)
// retry a failing task; they once sent it to dead before its handler ran
// ("attempt 1 of -9223372036854775808": MaxRetry+1 overflowed).
func TestRetryForever(t *testing.T) {
	t.Parallel()
	for _, n := range []int{math.MaxInt, math.MaxInt32} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			const fails = 3
			rec := newRecorder(func(ctx context.Context, task *Task) error {
				if task.RetriesLeft() != n-(task.Attempt-1) {
					return SkipRetry(errors.New("wrong RetriesLeft"))
				}
				if task.Attempt <= fails {
					return errors.New("not yet")
				}
				return nil
			})
			b.server(t, Config{RetryDelay: func(int, error, *Task) time.Duration { return 0 }}, rec)
			info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(n), queue.Retention(time.Hour))
			waitFor(t, 15*time.Second, "the task done", func() bool {
				ti, err := b.insp.GetTask(context.Background(), "default", info.ID)
				if err == nil && ti.State == queue.StateDead {
					t.Fatalf("MaxRetry(%d): dead: %s", n, ti.LastError)
				}
				return err == nil && ti.State == queue.StateSucceeded
			})
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if got := rec.runs[info.ID]; got != fails+1 {
				t.Fatalf("MaxRetry(%d): handler ran %d times, want %d", n, got, fails+1)
			}
			if last := rec.tasks[len(rec.tasks)-1]; last.MaxRetry != n {
				t.Fatalf("MaxRetry(%d): the handler saw MaxRetry %d", n, last.MaxRetry)
			}
		})
	}
}

// TestSkipRetryMessage: the dead task's error has one "worker:" prefix
// ("worker: skip retry: worker: task …" once), and errors.Is still finds
// both the sentinel and the cause.
func TestSkipRetryMessage(t *testing.T) {
	task := &Task{ID: "t1", Type: "email", Raw: true, Payload: []byte(`{"to": 1}`)}
	var v struct {
		To string `json:"to"`
	}
	err := SkipRetry(task.Decode(&v))
	if got := err.Error(); strings.Count(got, "worker:") != 1 || !strings.HasPrefix(got, "worker: skip retry: task t1 (email): ") {
		t.Fatalf("message %q, want one prefix: worker: skip retry: task t1 (email): …", got)
	}
	var typeErr *json.UnmarshalTypeError
	if !errors.Is(err, ErrSkipRetry) || !errors.As(err, &typeErr) {
		t.Fatalf("errors.Is(ErrSkipRetry) %v, errors.As(*json.UnmarshalTypeError) %v", errors.Is(err, ErrSkipRetry), errors.As(err, &typeErr))
	}
	if got := SkipRetry(errors.New("bad input")).Error(); got != "worker: skip retry: bad input" {
		t.Fatalf("message %q", got)
	}
}
