package serve

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/shardq/shardq/queue"
)

// Config is what the engine runs with: worker.Config checked and with its
// defaults filled in (worker.NewServer does both), and the hooks by which
// the engine hands a leased task to package worker.
type Config struct {
	queue.Config

	Queues          map[string]int
	StrictPriority  bool
	QueuePatterns   map[string]int
	QueueRefresh    time.Duration
	Concurrency     int
	Limits          map[string]queue.Limits
	Lease           time.Duration
	Heartbeat       time.Duration
	ShutdownTimeout time.Duration
	ForwardInterval time.Duration
	WorkflowSweep   time.Duration
	FetchSize       int
	Prefetch        int
	SucceededSize   int
	DeadSize        int
	WorkerID        string
	Clock           func() time.Time
	// Log is the worker's logger, its lines tagged with the worker's ID.
	Log *slog.Logger
	// Observer is told of lost leases and failed Redis calls; nil: no one.
	Observer Observer

	// Handle runs the handler of one job and says what its attempt
	// leads to; it runs on the job's own goroutine, ctx being the job's.
	Handle func(ctx context.Context, j *Job, f Fields) Verdict
	// Causes are the errors the engine cancels a handler's context with.
	Causes Causes
}

// Observer is what the engine tells of its own work: worker.Observer's
// methods that are not about a handler's run.
type Observer interface {
	LeaseLost(queue string)
	RedisError(step string)
}

// Causes are package worker's sentinels, which a handler reads from its
// context (context.Cause) and branches on with errors.Is: the engine
// cancels with them, it does not define them.
type Causes struct {
	Shutdown  error // graceful shutdown ran out of time
	Cancelled error // an operator cancelled the task
	LeaseLost error // the task's lease was taken over
	// Dead wraps an error so that the task goes to dead (worker.SkipRetry).
	Dead func(error) error
}

// now returns the script time argument: "" for the server's clock.
func (c *Config) now() string {
	if c.Clock == nil {
		return ""
	}
	return fmt.Sprint(c.Clock().UnixMilli())
}

// staleAfter is how old a worker's heartbeat may get before others reap it.
func (c *Config) staleAfter() time.Duration { return max(c.Lease, 3*c.Heartbeat) }

// matchWeight returns the weight a queue found in the registry runs with:
// the highest of the patterns it matches, and whether it matches any.
// Queues named in Config.Queues are run as configured, not by pattern.
func (c *Config) matchWeight(q string) (int, bool) {
	if _, static := c.Queues[q]; static {
		return 0, false
	}
	best := 0
	for p, w := range c.QueuePatterns {
		if ok, _ := path.Match(p, q); ok && w > best {
			best = w
		}
	}
	return best, best > 0
}

// partitionsOf returns how many partitions queue has under qc, before an
// operator set its count in Redis.
func partitionsOf(qc queue.Config, queue string) int {
	return max(qc.Partitions[queue], 1)
}
