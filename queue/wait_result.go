package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTaskDead reports, from WaitResult, a task that failed for good; the
// message carries its last error.
var ErrTaskDead = errors.New("queue: task is dead")

// waitPoll bounds how often WaitResult reads the task: it starts at 10ms
// and doubles up to this, so a long wait costs two reads a second.
const waitPoll = 500 * time.Millisecond

// WaitResult waits until the task id of queue has finished and returns
// the result its handler wrote (worker.Task.SetResult; nil when none). A
// task that went to dead is ErrTaskDead with its last error; the context
// ending returns its error. The task must be kept once done (enqueue it
// with Retention), or it may be gone before WaitResult sees it finish:
// then it is ErrNotFound. It reads the task with GetTask, after 10ms,
// then at doubling intervals up to half a second: never a tight loop. A
// result that does not open is an error that says why: ErrUnknownKey for
// one encrypted with a key the Inspector's KeyRing lacks, or when it has
// no KeyRing.
func (i *Inspector) WaitResult(ctx context.Context, queue, id string) ([]byte, error) {
	wait := 10 * time.Millisecond
	for {
		ti, err := i.GetTask(ctx, queue, id)
		switch {
		case err != nil:
			return nil, err
		case ti.State == StateSucceeded && ti.resultErr != nil:
			return nil, fmt.Errorf("the result of task %s of %q does not open: %w", id, queue, ti.resultErr)
		case ti.State == StateSucceeded:
			return ti.Result, nil
		case ti.State == StateDead:
			return nil, fmt.Errorf("%w: task %s of %q: %s", ErrTaskDead, id, queue, ti.LastError)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for the result of task %s of %q: %w", id, queue, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, waitPoll)
	}
}
