package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/envelope"
)

// Config is shared by Client and Inspector (and worker.Server): where keys
// live and how queues are laid out. Its zero value is ready to use.
type Config struct {
	// Prefix starts every key. Defaults to "shardq".
	Prefix string
	// MaxPayloadSize bounds a task's payload in bytes, before compression. Defaults to 1 MiB, NewTask's bound.
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
	// IDTTL is how long a caller-chosen task ID (TaskID) stays claimed:
	// at least IDTTL, at most 1.5 IDTTL, since claims expire in groups.
	// Producers that differ in IDTTL do not see each other's claims.
	// Defaults to 24h.
	IDTTL time.Duration
	// WorkflowRetention is how long a finished batch's or workflow's
	// bookkeeping stays readable (Inspector.GetWorkflow, WorkflowSummary) before
	// it expires.
	// Defaults to 24h.
	WorkflowRetention time.Duration
	// ContextHeaders, when set, is called at each Enqueue and EnqueueMany
	// with the call's context; the headers it returns go into every task
	// of the call (the task's own Header options win for the same key).
	// tracing.ContextHeaders injects the current trace context this way.
	ContextHeaders func(ctx context.Context) map[string]string
	// WaitReplicas, when above zero, makes Enqueue, EnqueueMany and a
	// worker's acks return only once that many replicas have the write
	// (Redis WAIT on the connection that ran the script), or fail with
	// ErrNotReplicated after WaitTimeout: the write happened on the master
	// but may be lost if it fails now. It narrows, but does not close, the
	// window in which a failover loses acknowledged writes: WAIT is not
	// strong consistency (see docs/operations.md, "Durable writes with
	// WaitReplicas"). Each call costs one round trip
	// per partition, and the time the replicas take. Defaults to 0: writes
	// return once the master has them.
	WaitReplicas int
	// WaitTimeout bounds how long a write waits for WaitReplicas replicas.
	// It must be below the Redis client's ReadTimeout, or NewClient and
	// worker.NewServer refuse it. Defaults to 1s.
	WaitTimeout time.Duration
	// NoCoalescing makes every single Enqueue its own round trip. By
	// default, an Enqueue call that finds 8 of the client's calls in flight,
	// one of them to its partition, waits for that one, and the calls
	// waiting then go out together, in one script call (see
	// docs/enqueueing.md, "Enqueueing from many goroutines"): each still
	// returns only once Redis has its task, and a producer enqueueing from
	// one goroutine is not affected.
	NoCoalescing bool
	// FullMessages writes every task's message in the full form. By
	// default a plain task (no group, the default MaxRetry, no
	// timeout, deadline, retention, uniqueness, headers or flow) is
	// written in a compact form, shorter per pending task, which workers
	// of builds from before v0.1.0 cannot read: they would send such a
	// task to dead. Set it while a rolling upgrade still runs such
	// workers; every worker of v0.1.0 and later reads both forms.
	FullMessages bool
	// Compression is how payloads and results of at least CompressAbove
	// bytes are stored: "fast" (S2, the default when empty), "small"
	// (zstd) or "none"; another value is ErrInvalid. A value is stored compressed only when that
	// makes it smaller. Every reader sees the original bytes: handlers,
	// Inspector, the dashboard and the CLI. The stored form says how it
	// was compressed, so producers and workers of different settings
	// read each other's tasks. Workers before this version do not read a
	// compressed payload: set "none" while a rolling upgrade still
	// runs them. With "fast" each producer also learns a dictionary
	// per task type from its first payloads, stores it in Redis, and
	// compresses the type's payloads of up to 4 KiB against it; not under
	// a KeyRing. docs/payloads.md compares the two.
	Compression string
	// CompressAbove is the least size, in bytes, that is compressed.
	// Defaults to 512: below it, JSON saves too little to pay for the
	// CPU.
	CompressAbove int
	// KeyRing, when set, encrypts payloads, results, progress messages and
	// step values with AES-256-GCM under its current key, and decrypts
	// them under whichever key of the ring they name. Producers, workers
	// and the Inspector that reads them need the ring; without it the
	// Inspector and the dashboard show them redacted. The task's type,
	// queue, IDs, times, headers and errors stay in clear
	// (docs/payloads.md).
	KeyRing *KeyRing
	// EncryptErrors encrypts the errors handlers return too, as they are
	// stored with the task. It needs a KeyRing.
	EncryptErrors bool
	// AllowPlaintext makes workers and the Inspector with a KeyRing accept
	// payloads, results, progress messages and step values that are not
	// encrypted: set it while tasks written before encryption was turned
	// on are still stored, during a migration to encryption. Without it,
	// such a task goes to dead with an error that names this setting, and
	// the Inspector marks it Malformed: else anyone who can write to Redis
	// could pass a plain value, or a ciphertext whose envelope they marked
	// plain, off as one the producers wrote. It has no effect without a
	// KeyRing.
	AllowPlaintext bool
	// Logger receives what shardq has to say. Defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults returns a copy of c with defaults filled in, or an error
// naming the first value out of range.
func (c Config) withDefaults() (Config, error) {
	n, err := c.engine().WithDefaults(errInvalidConfig)
	return c.from(n), err
}

// codec returns the envelope codec of c's Compression and KeyRing.
func (c *Config) codec() *envelope.Codec {
	e := c.engine()
	return e.Codec()
}

// engine returns c as the engine's packages take it: KeyRing is a type of
// this package, so the two do not convert.
// TestConfigMapsEveryField fails when a field is missed here or in from.
func (c Config) engine() config.Config {
	return config.Config{
		Prefix: c.Prefix, MaxPayloadSize: c.MaxPayloadSize, ShardSize: c.ShardSize, FeedSize: c.FeedSize,
		Partitions: c.Partitions, IDTTL: c.IDTTL, WorkflowRetention: c.WorkflowRetention, ContextHeaders: c.ContextHeaders,
		WaitReplicas: c.WaitReplicas, WaitTimeout: c.WaitTimeout, NoCoalescing: c.NoCoalescing, FullMessages: c.FullMessages,
		Compression: c.Compression, CompressAbove: c.CompressAbove, KeyRing: c.KeyRing.engine(),
		EncryptErrors: c.EncryptErrors, AllowPlaintext: c.AllowPlaintext, Logger: c.Logger,
	}
}

// from returns n, which engine made of c, as a Config: c's own KeyRing,
// n's other fields.
func (c Config) from(n config.Config) Config {
	return Config{
		Prefix: n.Prefix, MaxPayloadSize: n.MaxPayloadSize, ShardSize: n.ShardSize, FeedSize: n.FeedSize,
		Partitions: n.Partitions, IDTTL: n.IDTTL, WorkflowRetention: n.WorkflowRetention, ContextHeaders: n.ContextHeaders,
		WaitReplicas: n.WaitReplicas, WaitTimeout: n.WaitTimeout, NoCoalescing: n.NoCoalescing, FullMessages: n.FullMessages,
		Compression: n.Compression, CompressAbove: n.CompressAbove, KeyRing: c.KeyRing,
		EncryptErrors: n.EncryptErrors, AllowPlaintext: n.AllowPlaintext, Logger: n.Logger,
	}
}

// partitions returns how many partitions queue has.
func (c *Config) partitions(queue string) int {
	return max(c.Partitions[queue], 1)
}

func init() {
	config.Normalize = func(qc any) (any, error) { return qc.(Config).withDefaults() }
	config.CodecOf = func(qc any) *envelope.Codec {
		c := qc.(Config)
		return c.codec()
	}
	config.QueueOf = func(task, opts any) (string, error) {
		o, err := resolveOptions(task.(*Task).opts, opts.([]Option))
		return o.queue, err
	}
}
