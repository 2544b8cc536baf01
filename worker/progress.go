package worker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// errNotRunning reports SetProgress, SetResult or Step on a Task that is
// not one a Server handed to its handler.
var errNotRunning = fmt.Errorf("%w: not a running task", ErrInvalid)

// progressInterval is the least time between two progress writes of one
// task: a chatty handler does not flood Redis.
const progressInterval = time.Second

// maxProgressMessage bounds a progress message, in bytes.
const maxProgressMessage = 200

// report is the state a running task keeps for SetProgress.
type report struct {
	mu   sync.Mutex
	last time.Time
}

// SetProgress reports how far the task's handler is: a percent (0 to 100)
// and a short message, shown by queue.Inspector.GetTask, the dashboard's
// task page and its API. Writes are throttled to one a second:
// a report within the interval of the last one written is dropped
// (returning nil), except 100, which is always written. Progress stays
// with the task while it is kept; a worker that dies mid-task leaves its
// last report, and the next attempt overwrites it.
func (t *Task) SetProgress(ctx context.Context, percent int, msg string) error {
	if percent < 0 || percent > 100 || len(msg) > maxProgressMessage {
		return fmt.Errorf("%w: progress %d%% %q: want 0..100 and at most %d bytes", ErrInvalid, percent, msg, maxProgressMessage)
	}
	if t.job == nil {
		return fmt.Errorf("%w: task %s", errNotRunning, t.ID)
	}
	t.report.mu.Lock()
	now := time.Now()
	if percent < 100 && !t.report.last.IsZero() && now.Sub(t.report.last) < progressInterval {
		t.report.mu.Unlock()
		return nil
	}
	t.report.last = now
	t.report.mu.Unlock()
	if err := t.job.WriteProgress(ctx, percent, msg, now); err != nil {
		return fmt.Errorf("worker: progress of task %s: %w", t.ID, err)
	}
	return nil
}

// SetResult writes the task's result, for queue.Inspector.GetTask and
// WaitResult, the dashboard and its API. It is capped like payloads
// (queue.Config.MaxPayloadSize; ErrInvalid, nothing written) and
// kept with the task for its Retention: enqueue with queue.Retention to
// read it after the task finished. A later call replaces it; an attempt
// that fails after writing it leaves it for the next attempt to replace.
func (t *Task) SetResult(ctx context.Context, b []byte) error {
	if t.job == nil {
		return fmt.Errorf("%w: task %s", errNotRunning, t.ID)
	}
	if limit := t.job.MaxPayloadSize(); len(b) > limit {
		return fmt.Errorf("%w: result too large: task %s result is %d bytes, limit %d", ErrInvalid, t.ID, len(b), limit)
	}
	if err := t.job.WriteResult(ctx, b); err != nil {
		return fmt.Errorf("worker: result of task %s: %w", t.ID, err)
	}
	return nil
}
