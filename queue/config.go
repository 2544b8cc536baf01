package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Config is shared by Client and Inspector (and worker.Server): where keys
// live and how queues are laid out. Its zero value is ready to use.
type Config struct {
	// Prefix starts every key. Defaults to "shardq".
	Prefix string
	// MaxPayloadSize bounds a task's payload in bytes. Defaults to 1 MiB.
	MaxPayloadSize int
	// ShardSize bounds each shard of a pending list. Defaults to 1000.
	ShardSize int
	// FeedSize caps each partition's feed of recent tasks. Defaults to
	// 10,000; at most 1,000,000,000.
	FeedSize int
	// Partitions spreads a queue over several partitions, each its own
	// cluster slot. Producers and workers must agree; a count may grow but
	// not shrink. Once an operator sets a queue's count
	// (Inspector.SetPartitions), the count stored in Redis rules instead,
	// for every producer and worker, and may grow or shrink. Defaults to 1
	// per queue.
	Partitions map[string]int
	// IDTTL is how long a caller-chosen task ID (TaskID) stays claimed.
	// Defaults to 24h.
	IDTTL time.Duration
	// FlowRetention is how long a finished chain's or batch's bookkeeping
	// stays readable (Inspector.GetBatch, GetChain) before it expires.
	// Defaults to 24h.
	FlowRetention time.Duration
	// ContextHeaders, when set, is called at each Enqueue and EnqueueBatch
	// with the call's context; the headers it returns go into every task
	// of the call (the task's own Header options win for the same key).
	// tracing.ContextHeaders injects the current trace context this way.
	ContextHeaders func(ctx context.Context) map[string]string
	// WaitReplicas, when above zero, makes Enqueue, EnqueueBatch and a
	// worker's acks return only once that many replicas have the write
	// (Redis WAIT on the connection that ran the script), or fail with
	// ErrNotReplicated after WaitTimeout: the write happened on the master
	// but may be lost if it fails now. It narrows, but does not close, the
	// window in which a failover loses acknowledged writes: WAIT is not
	// strong consistency (see the README). Each call costs one round trip
	// per partition, and the time the replicas take. Defaults to 0: writes
	// return once the master has them.
	WaitReplicas int
	// WaitTimeout bounds how long a write waits for WaitReplicas replicas.
	// Defaults to 1s.
	WaitTimeout time.Duration
	// NoCoalescing makes every single Enqueue its own round trip. By
	// default, an Enqueue call that finds 8 of the client's calls in flight,
	// one of them to its partition, waits for that one, and the calls
	// waiting then go out together, in one batch call (see the README's
	// "Enqueue from many goroutines"): each still returns only once Redis
	// has its task, and a producer enqueueing from one goroutine is not
	// affected.
	NoCoalescing bool
	// FullMessages writes every task's message in the full form. By
	// default a plain task (no concurrency key, the default MaxRetry, no
	// timeout, deadline, retention, uniqueness, headers or flow) is
	// written in a compact form, 5 bytes shorter per pending task, which
	// workers built before 2026-11-26 cannot read: they would send such a
	// task to dead. Set it while a rolling upgrade still runs such
	// workers; every worker since reads both forms.
	FullMessages bool
	// Logger receives what shardq has to say. Defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultPrefix         = "shardq"
	DefaultMaxPayloadSize = 1 << 20
	DefaultShardSize      = 1000
	DefaultFeedSize       = 10_000
	DefaultIDTTL          = 24 * time.Hour
	DefaultWaitTimeout    = time.Second
	DefaultFlowRetention  = 24 * time.Hour
	maxShardSize          = 7000          // what one Lua unpack takes
	maxFeedSize           = 1_000_000_000 // packed into 4 bytes for enqueue_one.lua
	maxPartitions         = 1024
)

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the first value out of range.
func (c Config) withDefaults() (Config, error) {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.MaxPayloadSize = cmp.Or(c.MaxPayloadSize, DefaultMaxPayloadSize)
	c.ShardSize = cmp.Or(c.ShardSize, DefaultShardSize)
	c.FeedSize = cmp.Or(c.FeedSize, DefaultFeedSize)
	c.IDTTL = cmp.Or(c.IDTTL, DefaultIDTTL)
	c.WaitTimeout = cmp.Or(c.WaitTimeout, DefaultWaitTimeout)
	c.FlowRetention = cmp.Or(c.FlowRetention, DefaultFlowRetention)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := checkName(c.Prefix); err != nil {
		return c, fmt.Errorf("%w: Prefix %q: %s", ErrInvalidConfig, c.Prefix, err)
	}
	switch {
	case c.MaxPayloadSize < 0:
		return c, fmt.Errorf("%w: MaxPayloadSize %d, want > 0", ErrInvalidConfig, c.MaxPayloadSize)
	case c.ShardSize < 0 || c.ShardSize > maxShardSize:
		return c, fmt.Errorf("%w: ShardSize %d, want 1..%d", ErrInvalidConfig, c.ShardSize, maxShardSize)
	case c.FeedSize < 0 || c.FeedSize > maxFeedSize:
		return c, fmt.Errorf("%w: FeedSize %d, want 1..%d", ErrInvalidConfig, c.FeedSize, maxFeedSize)
	case c.IDTTL < 0:
		return c, fmt.Errorf("%w: IDTTL %v, want > 0", ErrInvalidConfig, c.IDTTL)
	case c.WaitReplicas < 0:
		return c, fmt.Errorf("%w: WaitReplicas %d, want >= 0", ErrInvalidConfig, c.WaitReplicas)
	case c.WaitTimeout < time.Millisecond:
		return c, fmt.Errorf("%w: WaitTimeout %v, want >= 1ms", ErrInvalidConfig, c.WaitTimeout)
	case c.FlowRetention < 0:
		return c, fmt.Errorf("%w: FlowRetention %v, want > 0", ErrInvalidConfig, c.FlowRetention)
	}
	for q, n := range c.Partitions {
		if err := ValidateQueueName(q); err != nil {
			return c, fmt.Errorf("%w: Partitions: %w", ErrInvalidConfig, err)
		}
		if n < 1 || n > maxPartitions {
			return c, fmt.Errorf("%w: Partitions[%q] = %d, want 1..%d", ErrInvalidConfig, q, n, maxPartitions)
		}
	}
	return c, nil
}

// partitions returns how many partitions queue has.
func (c *Config) partitions(queue string) int {
	return max(c.Partitions[queue], 1)
}

// Normalize returns c with its defaults filled in, or ErrInvalidConfig
// naming the first value out of range. worker.Server uses it.
func (c Config) Normalize() (Config, error) { return c.withDefaults() }

// PartitionsOf returns how many partitions queue has under c.
func (c Config) PartitionsOf(queue string) int { return c.partitions(queue) }
