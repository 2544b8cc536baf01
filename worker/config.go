package worker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/limits"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// Config configures a Server. Its zero value is ready to use: it runs the
// "default" queue with ten handlers at a time.
type Config struct {
	// Config is where keys live and how queues are partitioned; it must
	// match the producers' queue.Config.
	queue.Config

	// Queues maps each queue to run to its weight. With StrictPriority
	// false, free handlers go to queues with waiting work in proportion to
	// their weights, whatever the handlers' length (weights 3 and 1 give
	// the first queue 0.75 of the tasks run while both have a backlog); a
	// queue with nothing waiting leaves its share to the others. With
	// StrictPriority true, free handlers go always to the heaviest such
	// queue first. Defaults to {"default": 1} for a server with a handler.
	Queues         map[string]int
	StrictPriority bool
	// QueuePatterns maps patterns of queue names (path.Match syntax:
	// "tenant:*", "img-?"; a * does not cross a /) to a weight. The server
	// also runs every queue of the registry (where producers record a queue
	// at its first enqueue) that a pattern matches and Queues does not name,
	// looking every QueueRefresh: a new matching queue starts being served
	// without a restart, and one deleted (Inspector.DeleteQueue) stops being
	// served once its running tasks finish. Each matched queue runs with
	// the weight of its pattern (the highest, if several match), so matched
	// queues with a backlog share the slots equally. A pattern that matches
	// nothing leaves the server idle. With QueuePatterns set, Queues has no
	// default.
	QueuePatterns map[string]int
	// QueueRefresh is how often the registry is read for QueuePatterns,
	// and the partition layouts operators set (queue.Inspector.
	// SetPartitions) for every queue served: one HGETALL each. Defaults
	// to 2s.
	QueueRefresh time.Duration
	// Concurrency is how many handlers run at once in this process. Defaults to 10.
	Concurrency int
	// Limits are the queues' limits (concurrency, rate, per key, maximum
	// depth), written to Redis at Start; Inspector.SetLimits changes them
	// later without a restart, until a server starts with other values.
	Limits map[string]queue.Limits
	// Lease is how long a task stays leased without a heartbeat; a worker
	// that dies loses its tasks to others after this. Defaults to 30s.
	Lease time.Duration
	// Heartbeat is how often leases are extended and crashed workers
	// reaped. Defaults to Lease/3.
	Heartbeat time.Duration
	// ShutdownTimeout is how long Shutdown waits for running handlers
	// before cancelling them. Defaults to 10s.
	ShutdownTimeout time.Duration
	// ForwardInterval is the longest a due scheduled or retrying task
	// waits to be moved to its queue. A task due before the next look that
	// the last look saw is moved on time; one written after that look, such
	// as a retry of a few milliseconds, waits for the next look. Defaults
	// to 500ms.
	ForwardInterval time.Duration
	// WorkflowSweep is how often this server forwards its partitions' flow
	// notifications and delivers due flow tasks (callbacks, next links,
	// members a dead producer left) of every workflow home, besides doing so
	// right after it acked a flow task. Defaults to 1s.
	WorkflowSweep time.Duration
	// FetchSize bounds how many tasks one pop leases. Defaults to Concurrency, at most 100.
	FetchSize int
	// Prefetch bounds how many tasks a partition's fetcher leases ahead of
	// its free handler slots, while the queue has a backlog: they wait in
	// the worker and take the next slots it frees, so a round trip carries
	// several batches of quick tasks. It leases ahead only what the
	// handlers would start within about 2ms at their recent mean time, so
	// slow handlers get none, and never under StrictPriority. Leases of
	// tasks waiting ahead are extended like running ones; Shutdown gives
	// them back to the head of their queue without costing an attempt.
	// Defaults to 300, which keeps a pop of no-op tasks and their acks a
	// short call for Redis (see BENCHMARKS.md); negative: none; at most
	// 1,000 (a pop leases 1,000 tasks at most).
	Prefetch int
	// SucceededSize and DeadSize cap each partition's done and dead feeds.
	// Both default to 10,000.
	SucceededSize, DeadSize int
	// RetryDelay returns the wait before attempt+1 after a failed attempt.
	// Defaults to DefaultRetryDelay.
	RetryDelay func(attempt int, err error, t *Task) time.Duration
	// ErrorHandler, if set, is called with every failed attempt, on the
	// handler's goroutine, before the failure is written. A Snooze is not a
	// failure and an operator's cancel is not the handler's, so neither
	// calls it; after a timeout it gets the handler's context, which is
	// done by then.
	ErrorHandler func(ctx context.Context, t *Task, err error)
	// Schedules are periodic tasks this server enqueues, from Start to
	// Shutdown: any number of servers may carry the same schedules, and
	// each tick is enqueued once (see Schedule). A server given a nil
	// handler, with no Queues or QueuePatterns, only runs its schedules:
	// a process that schedules and runs nothing.
	Schedules []Schedule
	// Middleware wraps the handler; the first runs outermost.
	Middleware []Middleware
	// Observer, when set, is told of every handler's run, lost leases and
	// failed Redis calls: in-process metrics (metrics.NewWorkerMetrics).
	Observer Observer
	// WorkerID names this process in Redis. Defaults to host-pid-random.
	WorkerID string
	// Clock, if set, replaces the Redis server's clock in every script
	// and time.Now for the schedules' ticks (tests move time with it).
	// Leave nil in production: server time keeps a skewed worker clock
	// from deciding leases.
	Clock func() time.Time
}

// withDefaults returns c with its defaults filled in, checked; handled
// says the server has a handler (without one, it serves no queue).
func (c Config) withDefaults(handled bool) (Config, error) {
	var err error
	if c.Config, err = normalize(c.Config); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalid, err) // both sentinels match
	}
	if handled && len(c.Queues) == 0 && len(c.QueuePatterns) == 0 {
		c.Queues = map[string]int{queue.DefaultQueue: 1}
	}
	c.QueueRefresh = cmp.Or(c.QueueRefresh, 2*time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 10)
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.Heartbeat = cmp.Or(c.Heartbeat, c.Lease/3)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 10*time.Second)
	c.ForwardInterval = cmp.Or(c.ForwardInterval, 500*time.Millisecond)
	c.WorkflowSweep = cmp.Or(c.WorkflowSweep, time.Second)
	c.FetchSize = cmp.Or(c.FetchSize, min(c.Concurrency, 100))
	if c.Prefetch == 0 {
		c.Prefetch = 300
	}
	c.SucceededSize = cmp.Or(c.SucceededSize, 10_000)
	c.DeadSize = cmp.Or(c.DeadSize, 10_000)
	if c.RetryDelay == nil {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d-%s", cmp.Or(host, "host"), os.Getpid(), wire.Nonce())
	}
	return c, c.validate()
}

func (c Config) validate() error {
	for q, w := range c.Queues {
		if err := config.CheckName(q); err != nil {
			return fmt.Errorf("%w: Config.Queues: invalid queue name %q: %s", ErrInvalid, q, err)
		}
		if w < 1 {
			return fmt.Errorf("%w: Config.Queues[%q] weight %d, want >= 1", ErrInvalid, q, w)
		}
	}
	if err := checkPatterns(c.QueuePatterns); err != nil {
		return err
	}
	for q, l := range c.Limits {
		if err := limits.Check(q, limits.Values(l)); err != nil {
			return fmt.Errorf("%w: Config.Limits: %w", ErrInvalid, err)
		}
	}
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("%w: Config.Concurrency %d, want >= 1", ErrInvalid, c.Concurrency)
	case c.Lease < 100*time.Millisecond:
		return fmt.Errorf("%w: Config.Lease %v, want >= 100ms", ErrInvalid, c.Lease)
	case c.Heartbeat <= 0 || c.Heartbeat >= c.Lease:
		return fmt.Errorf("%w: Config.Heartbeat %v, want > 0 and below Lease %v", ErrInvalid, c.Heartbeat, c.Lease)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("%w: Config.ShutdownTimeout %v, want >= 0", ErrInvalid, c.ShutdownTimeout)
	case c.ForwardInterval < 0:
		return fmt.Errorf("%w: Config.ForwardInterval %v, want >= 0", ErrInvalid, c.ForwardInterval)
	case c.QueueRefresh < 10*time.Millisecond:
		return fmt.Errorf("%w: Config.QueueRefresh %v, want >= 10ms", ErrInvalid, c.QueueRefresh)
	case c.WorkflowSweep < time.Millisecond:
		return fmt.Errorf("%w: Config.WorkflowSweep %v, want >= 1ms", ErrInvalid, c.WorkflowSweep)
	case c.FetchSize < 1 || c.FetchSize > 1000:
		return fmt.Errorf("%w: Config.FetchSize %d, want 1..1000", ErrInvalid, c.FetchSize)
	case c.Prefetch > 1000:
		return fmt.Errorf("%w: Config.Prefetch %d, want at most 1000 (negative: none)", ErrInvalid, c.Prefetch)
	}
	return nil
}

// normalize returns qc with its defaults filled in, as queue's Client and
// Inspector fill them, or queue.ErrInvalid.
func normalize(qc queue.Config) (queue.Config, error) {
	c, err := config.Normalize(qc)
	return c.(queue.Config), err
}
