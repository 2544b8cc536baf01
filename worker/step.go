package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/wire"
)

// maxStepName bounds a step's name, in bytes.
const maxStepName = 200

// stepWriteTimeout bounds the write of a finished step. The write runs
// even when the handler's context has ended, since the step's work is
// done and a record saves running it again.
const stepWriteTimeout = 5 * time.Second

// stepLog is a running task's finished steps, read from Redis at the
// attempt's first Step and kept in step with what it writes.
type stepLog struct {
	mu     sync.Mutex
	loaded bool
	steps  wire.Steps
}

// Step runs fn as the step called name of the running task whose handler
// ctx belongs to, and records the value fn returned with the task. When
// the task runs again, after an error or a crash, a step it finished
// before is skipped: Step returns the recorded value without calling fn.
// So a handler that charges a card and then sends a mail charges once,
// even when the mail fails and the task is retried.
//
// A step is at least once, not exactly once. A crash after fn's side
// effect and before its record runs fn again on the next attempt. An
// error from fn records nothing, so the next attempt runs fn again too.
//
// The value is stored as msgpack, a struct keyed by json tags as
// payloads are, and decoded into T on the next attempts. The values of
// all of a task's steps together are capped like a result (queue.Config.MaxPayloadSize): past it Step
// returns fn's value with ErrInvalid and records nothing. The
// records go when the task does, and a kept task keeps them for its
// Retention. queue.Inspector.GetTask and the dashboard's task page show
// them.
//
// A Task that no Server runs, as a unit test hands to Mux.ProcessTask,
// keeps its steps in memory: calling ProcessTask again with the same Task
// plays a retry.
//
// Step outside a handler's context is ErrInvalid ("not a running task"). A name that is
// empty or over 200 bytes is ErrInvalid. When the record cannot be
// written (Redis failed, or the lease was lost: ErrLeaseLost), Step
// returns fn's value and that error.
func Step[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	t, ok := TaskFromContext(ctx)
	if !ok {
		return zero, fmt.Errorf("%w: Step %q outside a handler's context", errNotRunning, name)
	}
	if name == "" || len(name) > maxStepName {
		return zero, fmt.Errorf("%w: step name %q of task %s: want 1 to %d bytes", ErrInvalid, name, t.ID, maxStepName)
	}
	done, err := t.stepsDone(ctx)
	if err != nil {
		return zero, err
	}
	if st := done.Find(name); st != nil {
		var v T
		if err := wire.UnmarshalPayload(st.Result, &v); err != nil {
			return zero, fmt.Errorf("worker: step %q of task %s: decode its recorded value into %T: %w", name, t.ID, v, err)
		}
		return v, nil
	}
	v, err := fn(ctx)
	if err != nil {
		return v, err
	}
	b, err := wire.MarshalPayload(v)
	if err != nil {
		return v, fmt.Errorf("worker: step %q of task %s: encode its value %T: %w", name, t.ID, v, err)
	}
	return v, t.recordStep(ctx, name, b)
}

// stepsDone returns the task's finished steps, read once per attempt.
func (t *Task) stepsDone(ctx context.Context) (wire.Steps, error) {
	t.steps.mu.Lock()
	defer t.steps.mu.Unlock()
	if t.steps.loaded || t.job == nil {
		return t.steps.steps, nil
	}
	steps, err := t.job.ReadSteps(ctx)
	if err != nil {
		return nil, fmt.Errorf("worker: task %s: %w", t.ID, err)
	}
	t.steps.steps, t.steps.loaded = steps, true
	return steps, nil
}

// recordStep adds the finished step name with its value b to the task's
// steps, under the task's lease.
func (t *Task) recordStep(ctx context.Context, name string, b []byte) error {
	t.steps.mu.Lock()
	defer t.steps.mu.Unlock()
	next := append(make(wire.Steps, 0, len(t.steps.steps)+1), t.steps.steps...)
	at := time.Now().UnixMilli()
	if st := next.Find(name); st != nil {
		// the same name finished twice in one attempt: the later value
		st.Result, st.At = b, at
	} else {
		next = append(next, wire.Step{Name: name, At: at, Result: b})
	}
	if t.job == nil {
		t.steps.steps = next // a unit test's Task: in memory only
		return nil
	}
	if limit := t.job.MaxPayloadSize(); next.Size() > limit {
		return fmt.Errorf("%w: result too large: task %s: steps' values would be %d bytes with step %q, limit %d", ErrInvalid, t.ID, next.Size(), name, limit)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepWriteTimeout)
	defer cancel()
	written, err := t.job.WriteSteps(wctx, next)
	if err != nil {
		return fmt.Errorf("worker: record step %q of task %s: %w", name, t.ID, err)
	}
	if !written {
		return fmt.Errorf("%w: step %q of task %s not recorded", ErrLeaseLost, name, t.ID)
	}
	t.steps.steps = next
	return nil
}
