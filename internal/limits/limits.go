// Package limits is the stored layout of a queue's limits: the one place
// that checks and writes them, for queue.Inspector.SetLimits and the
// worker's Config.Limits. (It was public as queue.WriteLimits, which
// handed users key plumbing they never call.)
package limits

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/quota"
)

// Values are a queue's limits, field for field queue.Limits (which
// converts to it).
type Values struct {
	Concurrency      int
	Rate             int
	Per              time.Duration
	GroupConcurrency int
	MaxDepth         int
	GroupRate        int
	GroupMaxDepth    int
}

// Check reports what is wrong with v for queue, or nil.
func Check(queue string, v Values) error {
	if v.Concurrency < 0 || v.Rate < 0 || v.Per < 0 || v.GroupConcurrency < 0 || v.MaxDepth < 0 || v.GroupRate < 0 || v.GroupMaxDepth < 0 {
		return fmt.Errorf("limits of %q: %+v: negative values", queue, v)
	}
	if (v.Rate > 0 || v.GroupRate > 0) && v.Per > 0 && v.Per < time.Millisecond {
		return fmt.Errorf("limits of %q: Per %v, want >= 1ms", queue, v.Per)
	}
	return nil
}

// Write queues the write of v to partition k's limits hash on p. No
// limits at all delete the hash: a dequeue that finds neither it nor a
// paused flag skips reading them. Without a GroupMaxDepth the per-key
// depths are deleted: they are kept only while the limit is.
func Write(ctx context.Context, p redis.Pipeliner, k keys.Partition, v Values) {
	if v.GroupMaxDepth == 0 {
		p.Del(ctx, k.KeyDepth())
	}
	key := k.Limits()
	if v == (Values{}) {
		p.Del(ctx, key)
		return
	}
	per := v.Per
	if per <= 0 {
		per = time.Second
	}
	p.HSet(ctx, key, "concurrency", v.Concurrency, "rate", v.Rate, "per", per.Milliseconds(), "keyconc", v.GroupConcurrency, "maxdepth", v.MaxDepth, "keyrate", v.GroupRate, "keymaxdepth", v.GroupMaxDepth)
}

// WriteFleetWide sets the limits of a queue of n partitions so that they
// hold across all of them: concurrency and rate as quotas the partitions
// share (internal/quota), the rate's window and the key limit on each
// partition (a group's tasks all go to one partition, so the key
// limit is fleet-wide as it is).
func WriteFleetWide(ctx context.Context, rdb redis.UniversalClient, prefix, queue string, n, shardSize int, v Values) error {
	q := quota.Queue{Prefix: prefix, Name: queue, Partitions: n, ShardSize: shardSize}
	if err := quota.Set(ctx, rdb, q, quota.Limits{Concurrency: v.Concurrency, Rate: v.Rate, Per: v.Per}); err != nil {
		return err
	}
	per := v.Per
	if per <= 0 {
		per = time.Second
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			part := keys.For(prefix, queue, i)
			if v.GroupMaxDepth == 0 {
				p.Del(ctx, part.KeyDepth())
			}
			k := part.Limits()
			if v == (Values{}) {
				// quota.Set removed the quotas: nothing is left to read
				p.Del(ctx, k)
				continue
			}
			// the full limits stay at 0 here: the quotas (cq, rq) rule
			p.HSet(ctx, k, "concurrency", 0, "rate", 0, "per", per.Milliseconds(), "keyconc", v.GroupConcurrency,
				"maxdepth", v.MaxDepth, "keyrate", v.GroupRate, "keymaxdepth", v.GroupMaxDepth)
		}
		return nil
	})
	return err
}
