package serve

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/wait"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// forward moves due scheduled and retrying tasks of every partition to
// their pending lists, in one round trip per pass. It sleeps until the next
// task it knows of is due, or ForwardInterval at most, so tasks start on
// time rather than on a coarse tick.
func (s *Engine) forward(ctx context.Context) {
	var backoff wait.Backoff
	for ctx.Err() == nil {
		next, err := s.forwardOnce(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.logRedisError("forward", err)
				backoff.Sleep(ctx)
			}
			continue
		}
		backoff.Reset()
		wait.Sleep(ctx, next)
	}
}

// forwardOnce runs one pass and returns how long to sleep.
func (s *Engine) forwardOnce(ctx context.Context) (time.Duration, error) {
	parts := s.partList()
	if len(parts) == 0 {
		return s.cfg.ForwardInterval, nil // QueuePatterns matched nothing yet
	}
	cmds := make([]*redis.Cmd, len(parts))
	err := rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
		for i, p := range parts {
			k := p.k
			cmds[i] = pipe.Run(ctx, script.Forward, []string{k.Scheduled(), k.Retry(), k.Msg(), k.State(), k.First(), k.Last(), k.Guard()},
				k.ShardPrefix(), s.cfg.now(), s.cfg.ShardSize, 1000)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	next := s.cfg.ForwardInterval
	for _, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err != nil || len(res) != 2 {
			continue
		}
		if res[0] >= 1000 {
			next = 0 // a full pass: more may be due already
		}
		if res[1] != codes.None {
			next = min(next, time.Duration(res[1])*time.Millisecond)
		}
	}
	return next, nil
}
