package lua

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SafeCounter is a safe counter: a counter that is missing (evicted, deleted,
// lost in a failover) is never silently restarted at zero. It is restored
// from its safe start point, the highest score in the sorted set StartFrom,
// or, when there is none, incrementing it fails with ErrCounterMissing.
type SafeCounter struct {
	Key       string
	StartFrom string // a sorted set whose highest score is the safe start; "" = none
}

// IncrBy adds n and returns the new value.
func (c *SafeCounter) IncrBy(ctx context.Context, rdb redis.Scripter, n int64) (int64, error) {
	keys := []string{c.Key}
	if c.StartFrom != "" {
		keys = append(keys, c.StartFrom)
	}
	v, err := counterIncr.Run(ctx, rdb, keys, n).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w: %s", ErrCounterMissing, c.Key)
	}
	return v, err
}

// Init creates the counter at v unless it exists, and reports whether it did.
func (c *SafeCounter) Init(ctx context.Context, rdb redis.Cmdable, v int64) (bool, error) {
	return rdb.SetNX(ctx, c.Key, v, 0).Result()
}
