package worker

import (
	"time"

	"github.com/shardq/shardq/internal/serve"

	"github.com/shardq/shardq/queue"
)

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
	// State is the state the run left the task in:
	// queue.StateSucceeded; queue.StateRetry after a failure with retries
	// left; queue.StateDead when it failed for good (no retries left,
	// SkipRetry, an operator's cancel); queue.StatePending when shutdown cut
	// the run short; and queue.StateScheduled for a Snooze: back after its
	// delay, no attempt counted.
	State queue.State
	// Panicked is set when the handler panicked (the task failed with a
	// *PanicError).
	Panicked bool
}

// stateOf is the state a verdict leaves its task in (HandlerEvent.State).
func stateOf(v serve.Verdict) queue.State {
	switch {
	case v.Requeue:
		return queue.StatePending
	case v.Err == nil:
		return queue.StateSucceeded
	case v.Snooze:
		return queue.StateScheduled
	case v.Delay < 0:
		return queue.StateDead
	}
	return queue.StateRetry
}
