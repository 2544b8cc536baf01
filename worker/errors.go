package worker

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors callers and handlers branch on with errors.Is.
var (
	// ErrUnknownType reports a task whose type no handler is registered for.
	// The task fails and is retried: a newer worker may know the type.
	ErrUnknownType = errors.New("worker: no handler for task type")
	// ErrSkipRetry marks a failure that retrying cannot fix: the task goes to dead.
	ErrSkipRetry = errors.New("worker: skip retry")
	// ErrLeaseLost is the cause of a handler's context cancellation when
	// a hold the handler ran under was lost. Unwrapped, it is the task's
	// lease, taken over (the worker stalled past it): the task now belongs
	// to another worker and this attempt's outcome will be rejected.
	// Wrapped by a message that names it, it is the slot of a Semaphore,
	// expired: the task is still this worker's, and what the handler
	// returns decides, as usual.
	ErrLeaseLost = errors.New("worker: lease lost")
	// ErrShutdown is the cause of a handler's context cancellation when
	// graceful shutdown ran out of time; the task goes back to the queue
	// without costing an attempt.
	ErrShutdown = errors.New("worker: shutting down")
	// ErrInvalid reports a call the worker refuses before it does
	// anything: an argument it cannot take (a Config value out of range,
	// a bad Schedule or SemaphoreConfig, a progress report or a step name
	// out of bounds, a result or steps' values over
	// queue.Config.MaxPayloadSize: "result too large"), or a call its
	// receiver cannot take (Start on a started Server, Shutdown on one
	// not running, SetResult or Step outside a handler: "not a running
	// task"). The error that wraps it says which, and with what value.
	ErrInvalid = errors.New("worker: invalid")
	// ErrCancelled is the cause of a handler's context cancellation when
	// an operator cancelled the task (Inspector.CancelTask, the dashboard).
	// A handler that then returns an error sends the task to dead; one that
	// returns nil finished it anyway.
	ErrCancelled = errors.New("worker: cancelled by an operator")
)

// SkipRetry wraps err so the task goes straight to dead, whatever retries it has left.
func SkipRetry(err error) error {
	return &skipRetryError{err: err}
}

// skipRetryError is SkipRetry's error. Its message has one "worker:"
// prefix even when err's has one too (a failed Task.Decode): "worker: skip
// retry: task …", not "worker: skip retry: worker: task …".
type skipRetryError struct{ err error }

func (e *skipRetryError) Error() string {
	if e.err == nil {
		return ErrSkipRetry.Error()
	}
	return ErrSkipRetry.Error() + ": " + strings.TrimPrefix(e.err.Error(), "worker: ")
}

func (e *skipRetryError) Unwrap() []error { return []error{ErrSkipRetry, e.err} }

// RetryIn wraps err so the task is retried after d instead of after the
// Config.RetryDelay backoff. It still counts an attempt: a task out of
// retries goes to dead.
func RetryIn(d time.Duration, err error) error {
	return &retryInError{delay: d, err: err}
}

type retryInError struct {
	delay time.Duration
	err   error
}

func (e *retryInError) Error() string { return fmt.Sprintf("%v (retry in %v)", e.err, e.delay) }
func (e *retryInError) Unwrap() error { return e.err }

// Snooze returns an error that puts the task back in its queue for d
// without counting the attempt or recording an error: the task could not
// start yet (a limit, a dependency not ready), and it holds no worker slot
// while it waits.
func Snooze(d time.Duration) error { return &snoozeError{delay: d} }

type snoozeError struct{ delay time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.delay) }

// PanicError is the failure of a handler that panicked, with its stack.
type PanicError struct {
	Value any
	Stack string
}

// Error returns the panic value and the stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }
