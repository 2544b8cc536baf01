package worker

import "time"

// Observer receives what a worker's handlers and Redis calls do, for
// in-process metrics (package metrics implements it with Prometheus).
// Config.Observer sets it. Calls come from handler goroutines at every
// task: implementations must be safe for concurrent use and fast.
type Observer interface {
	// HandlerStarted is called as a handler starts.
	HandlerStarted(queue, taskType string)
	// HandlerFinished is called as a handler returns, with what follows.
	HandlerFinished(e HandlerEvent)
	// LeaseLost is called when a running task's lease was lost (the
	// worker stalled past it) and its handler is cancelled, and when tasks
	// leased ahead of the free slots (Config.Prefetch) lost theirs while
	// they waited, and are dropped unrun.
	LeaseLost(queue string)
	// RedisError is called when a Redis call of the worker fails; step
	// says which ("fetch", "heartbeat", "ack", ...). The worker retries it.
	RedisError(step string)
}

// HandlerEvent is one handler's run.
type HandlerEvent struct {
	Queue    string
	Type     string
	Duration time.Duration
	Outcome  Outcome
	// Panicked is set when the handler panicked (the task failed with a
	// *PanicError).
	Panicked bool
}

// Outcome is what follows a handler's run.
type Outcome int

// The outcomes of a handler's run.
const (
	OutcomeSucceeded Outcome = iota // succeeded
	OutcomeRetry                    // failed; retried later
	OutcomeDead                     // failed for good (no retries left, SkipRetry, cancelled)
	OutcomeSnoozed                  // Snooze: back later, no attempt counted
	OutcomeRequeued                 // shutdown cut it short; back to pending, no attempt counted
)

// String returns the outcome's name, as metrics label it.
func (r Outcome) String() string {
	switch r {
	case OutcomeSucceeded:
		return "succeeded"
	case OutcomeRetry:
		return "retry"
	case OutcomeDead:
		return "dead"
	case OutcomeSnoozed:
		return "snoozed"
	case OutcomeRequeued:
		return "requeued"
	}
	return "unknown"
}

// outcomeOf says what an outcome does to its task.
func outcomeOf(o outcome) Outcome {
	switch {
	case o.kind == outcomeAck:
		return OutcomeSucceeded
	case o.kind == outcomeRequeue:
		return OutcomeRequeued
	case o.snooze == 1:
		return OutcomeSnoozed
	case o.delayMS < 0:
		return OutcomeDead
	}
	return OutcomeRetry
}
