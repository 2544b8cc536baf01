// Package config fills in and checks queue.Config for shardq's own
// packages. Config mirrors queue.Config field for field, with the
// engine's types where queue has its own (KeyRing, Compression); queue
// maps one to the other, and TestConfigMapsEveryField checks the mapping.
package config

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/logging"
)

// Config is queue.Config without its documentation: see there.
type Config struct {
	Prefix            string
	MaxPayloadSize    int
	ShardSize         int
	FeedSize          int
	Partitions        map[string]int
	IDTTL             time.Duration
	WorkflowRetention time.Duration
	ContextHeaders    func(ctx context.Context) map[string]string
	WaitReplicas      int
	WaitTimeout       time.Duration
	NoCoalescing      bool
	FullMessages      bool
	Compression       string
	CompressAbove     int
	KeyRing           *envelope.KeyRing
	EncryptErrors     bool
	AllowPlaintext    bool
	Logger            *slog.Logger
}

// Normalize returns a queue.Config with its defaults filled in, as
// queue's Client and Inspector fill them, or queue.ErrInvalid; CodecOf
// the envelope codec of a queue.Config; QueueOf the queue a *queue.Task
// goes to when enqueued with a []queue.Option, or queue.ErrInvalid for a
// bad option. Package queue sets them in its init: it imports this
// package, so this one cannot import it.
var (
	Normalize func(qc any) (any, error)
	CodecOf   func(qc any) *envelope.Codec
	QueueOf   func(task, opts any) (string, error)
)

// Defaults of Config, and the bounds it is checked against.
const (
	DefaultPrefix         = "shardq"
	DefaultMaxRetry       = 25 // a task's retries when MaxRetry is not given
	DefaultMaxPayloadSize = envelope.DefaultLimit
	DefaultShardSize      = 1000
	DefaultFeedSize       = 10_000
	DefaultIDTTL          = 24 * time.Hour
	DefaultWaitTimeout    = time.Second
	DefaultFlowRetention  = 24 * time.Hour
	DefaultCompressAbove  = 512
	MaxShardSize          = 7000          // what one Lua unpack takes
	MaxFeedSize           = 1_000_000_000 // packed into 4 bytes for enqueue_one.lua
	MaxPartitions         = 1024
)

// compressions are the names of Config.Compression, at the index of the
// envelope.Compression each names.
var compressions = []string{envelope.Fast: "fast", envelope.Small: "small", envelope.None: "none"}

// WithDefaults returns a copy of c with defaults filled in, or invalid
// (queue.ErrInvalid) wrapped with the first value out of range.
func (c Config) WithDefaults(invalid error) (Config, error) {
	c.Prefix = cmp.Or(c.Prefix, DefaultPrefix)
	c.MaxPayloadSize = cmp.Or(c.MaxPayloadSize, DefaultMaxPayloadSize)
	c.ShardSize = cmp.Or(c.ShardSize, DefaultShardSize)
	c.FeedSize = cmp.Or(c.FeedSize, DefaultFeedSize)
	c.IDTTL = cmp.Or(c.IDTTL, DefaultIDTTL)
	c.WaitTimeout = cmp.Or(c.WaitTimeout, DefaultWaitTimeout)
	c.WorkflowRetention = cmp.Or(c.WorkflowRetention, DefaultFlowRetention)
	c.CompressAbove = cmp.Or(c.CompressAbove, DefaultCompressAbove)
	c.Compression = cmp.Or(c.Compression, compressions[envelope.Fast])
	// repeated warnings are throttled: an outage repeats them for its length
	c.Logger = logging.Throttle(cmp.Or(c.Logger, slog.Default()))
	if err := CheckName(c.Prefix); err != nil {
		return c, fmt.Errorf("%w: Prefix %q: %s", invalid, c.Prefix, err)
	}
	switch {
	case c.MaxPayloadSize < 0:
		return c, fmt.Errorf("%w: MaxPayloadSize %d, want > 0", invalid, c.MaxPayloadSize)
	case c.ShardSize < 0 || c.ShardSize > MaxShardSize:
		return c, fmt.Errorf("%w: ShardSize %d, want 1..%d", invalid, c.ShardSize, MaxShardSize)
	case c.FeedSize < 0 || c.FeedSize > MaxFeedSize:
		return c, fmt.Errorf("%w: FeedSize %d, want 1..%d", invalid, c.FeedSize, MaxFeedSize)
	case c.IDTTL < 0:
		return c, fmt.Errorf("%w: IDTTL %v, want > 0", invalid, c.IDTTL)
	case c.WaitReplicas < 0:
		return c, fmt.Errorf("%w: WaitReplicas %d, want >= 0", invalid, c.WaitReplicas)
	case c.WaitTimeout < time.Millisecond:
		return c, fmt.Errorf("%w: WaitTimeout %v, want >= 1ms", invalid, c.WaitTimeout)
	case c.WorkflowRetention < 0:
		return c, fmt.Errorf("%w: WorkflowRetention %v, want > 0", invalid, c.WorkflowRetention)
	case !slices.Contains(compressions, c.Compression):
		return c, fmt.Errorf("%w: Compression %q, want fast, small or none", invalid, c.Compression)
	case c.CompressAbove < 0:
		return c, fmt.Errorf("%w: CompressAbove %d, want > 0", invalid, c.CompressAbove)
	case c.EncryptErrors && c.KeyRing == nil:
		return c, fmt.Errorf("%w: EncryptErrors needs a KeyRing", invalid)
	}
	if c.KeyRing != nil {
		if err := c.KeyRing.Check(); err != nil {
			return c, fmt.Errorf("%w: KeyRing: %w", invalid, err)
		}
	}
	for q, n := range c.Partitions {
		if err := CheckName(q); err != nil {
			return c, fmt.Errorf("%w: Partitions: queue name %q: %s", invalid, q, err)
		}
		if n < 1 || n > MaxPartitions {
			return c, fmt.Errorf("%w: Partitions[%q] = %d, want 1..%d", invalid, q, n, MaxPartitions)
		}
	}
	return c, nil
}

// Codec returns the envelope codec of c's compression and key ring.
func (c *Config) Codec() *envelope.Codec {
	return &envelope.Codec{Compression: envelope.Compression(slices.Index(compressions, c.Compression)), Above: c.CompressAbove, Ring: c.KeyRing, AllowPlain: c.AllowPlaintext}
}
