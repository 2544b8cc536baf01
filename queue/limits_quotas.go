package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// quotas returns, on a queue of several partitions, each partition's
// share of its fleet-wide concurrency and rate limits now (-1 where a
// kind is not limited), in one round trip after the registry read; nil
// on a queue of one partition, which holds its limits whole.
func (i *Inspector) quotas(ctx context.Context, queue string) ([]inspect.Quota, error) {
	n, err := i.partitions(ctx, queue)
	if err != nil || n < 2 {
		return nil, err
	}
	cmds := make([]*redis.SliceCmd, n)
	err = rcall.Do(ctx, i.rdb, func() error {
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for part := range n {
				cmds[part] = p.HMGet(ctx, keys.For(i.cfg.Prefix, queue, part).Limits(), "cq", "rq")
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("quotas of %q: %w", queue, err)
	}
	out := make([]inspect.Quota, n)
	for part, c := range cmds {
		q := inspect.Quota{Partition: part, Concurrency: codes.None, Rate: codes.None}
		if v, ok := c.Val()[0].(string); ok {
			q.Concurrency = atoi(v)
		}
		if v, ok := c.Val()[1].(string); ok {
			q.Rate = atoi(v)
		}
		out[part] = q
	}
	return out, nil
}
