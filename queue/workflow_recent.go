package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// recentFlows returns up to limit of the newest chains, batches and
// workflows, newest first, in one round trip (one read per workflow home,
// pipelined). Each home keeps its newest 1,000.
func (i *Inspector) recentFlows(ctx context.Context, limit int) ([]inspect.FlowSummary, error) {
	if limit <= 0 {
		return nil, nil
	}
	cmds := make([]*redis.ZSliceCmd, keys.FlowPartitions)
	err := rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for n := range keys.FlowPartitions {
				cmds[n] = p.ZRevRangeWithScores(ctx, keys.Home(i.cfg.Prefix, n).Recent(), 0, int64(limit-1))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("recent flows: %w", err)
	}
	var out []inspect.FlowSummary
	for _, c := range cmds {
		for _, z := range c.Val() {
			m, _ := z.Member.(string)
			if len(m) < 3 {
				continue
			}
			kind := "batch"
			switch m[0] {
			case 'c':
				continue // a chain 0.1.0 enqueued: no page reads it
			case 'w':
				kind = "workflow"
			}
			out = append(out, inspect.FlowSummary{Kind: kind, ID: keys.LongID(m[2:]), CreatedAt: time.UnixMilli(int64(z.Score))})
		}
	}
	slices.SortStableFunc(out, func(a, b inspect.FlowSummary) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out[:min(len(out), limit)], nil
}

// forwardFlowsAfter forwards, after a deletion that succeeded (*err nil),
// the flow notifications of queue's partitions: a deleted flow task is
// dead to its flow (the delete scripts write that in T:notify), and the
// queue may have no worker to forward it. Failing here loses nothing: the
// notifications wait for the next forwarder.
func (i *Inspector) forwardFlowsAfter(ctx context.Context, queue string, err *error) {
	if *err != nil {
		return
	}
	env := flowEnv(i.rdb, &i.cfg)
	lists := make([]string, i.cfg.partitions(queue))
	for n := range lists {
		lists[n] = keys.For(i.cfg.Prefix, queue, n).Notify()
	}
	_ = rcall.Do(ctx, i.rdb, func() error {
		_, due, err := env.Forward(ctx, lists)
		if err == nil && len(due) > 0 {
			_, err = env.Deliver(ctx, due)
		}
		return err
	})
}
