package queue

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// existing sets infos[i] for each task whose errs[i] is ErrDuplicateTaskID
// to the task that holds the ID: what its partition has of it, read in
// one round trip for all of them. That is its state, and its result while
// it is kept. A task the partition no longer holds (finished and not
// kept, or deleted) gets its ID, queue and partition alone. When the read
// fails, infos[i] stays nil; the error still says duplicate.
func (c *Client) existing(ctx context.Context, ps []pending, infos []*TaskInfo, errs []error) {
	var dups []pending
	for _, p := range ps {
		if errors.Is(errs[p.index], ErrDuplicateTaskID) {
			dups = append(dups, p)
		}
	}
	if len(dups) == 0 {
		return
	}
	cmds := make([]*redis.Cmd, len(dups))
	err := rcall.Pipelined(ctx, c.rdb, func(pipe *rcall.Pipe) error {
		for i, p := range dups {
			k := keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition)
			cmds[i] = pipe.Run(ctx, script.GetTask, getTaskKeys(k), p.id)
		}
		return nil
	})
	if err != nil {
		return
	}
	for i, p := range dups {
		ti, err := getTaskReply(&opener{codec: c.codec, limit: c.cfg.MaxPayloadSize}, p.info.Queue, p.info.Partition, p.info.ID, cmds[i])
		switch {
		case err != nil:
		case ti == nil:
			infos[p.index] = &TaskInfo{ID: p.info.ID, Queue: p.info.Queue, Partition: p.info.Partition}
		default:
			infos[p.index] = ti
		}
	}
}
