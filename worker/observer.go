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
	Result   Result
	// Panicked is set when the handler panicked (the task failed with a
	// *PanicError).
	Panicked bool
}

// Result is what follows a handler's run.
type Result int

// The results of a handler's run.
const (
	ResultDone     Result = iota // succeeded
	ResultRetry                  // failed; retried later
	ResultDead                   // failed for good (no retries left, SkipRetry, cancelled)
	ResultSnoozed                // Snooze: back later, no attempt counted
	ResultRequeued               // shutdown cut it short; back to pending, no attempt counted
)

// String returns the result's name, as metrics label it.
func (r Result) String() string {
	switch r {
	case ResultDone:
		return "done"
	case ResultRetry:
		return "retry"
	case ResultDead:
		return "dead"
	case ResultSnoozed:
		return "snoozed"
	case ResultRequeued:
		return "requeued"
	}
	return "unknown"
}

// resultOf says what an outcome does to its task.
func resultOf(o outcome) Result {
	switch {
	case o.kind == outcomeAck:
		return ResultDone
	case o.kind == outcomeRequeue:
		return ResultRequeued
	case o.snooze == 1:
		return ResultSnoozed
	case o.delayMS < 0:
		return ResultDead
	}
	return ResultRetry
}
