package queue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// QueueInfos returns the QueueInfo of each of queues, in their order, or
// of every queue, sorted by name, when none is named: in two round trips
// whatever the number of queues and partitions, the registry, then one
// pipeline of every partition's counts. On Redis Cluster that pipeline is
// one round trip per master, sent to all masters at once (go-redis splits
// a pipeline by node), not one per partition. Its Redis commands grow with
// the number of queues: name a page of them (Queues lists every name) to
// bound its cost. A named queue the registry does not know is
// ErrNotFound.
func (i *Inspector) QueueInfos(ctx context.Context, queues ...string) ([]*QueueInfo, error) {
	if len(queues) > 0 {
		parts, err := i.partitionsOf(ctx, queues)
		if err != nil {
			return nil, err
		}
		return i.queueInfos(ctx, parts, queues)
	}
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(reg))
	for q := range reg {
		names = append(names, q)
	}
	sort.Strings(names)
	return i.queueInfos(ctx, reg, names)
}

// queueInfos reads the counts of names, whose partitions reg holds, in
// one pipeline.
func (i *Inspector) queueInfos(ctx context.Context, reg map[string]layout.Layout, names []string) ([]*QueueInfo, error) {
	out := make([]*QueueInfo, len(names))
	cmds := make([][]*redis.Cmd, len(names))
	err := rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for j, q := range names {
				n := max(reg[q].Serve, i.cfg.partitions(q))
				out[j] = &QueueInfo{Queue: q, Partitions: n, Draining: reg[q].Serve - reg[q].Route}
				cmds[j] = make([]*redis.Cmd, n)
				for part := range n {
					k := keys.For(i.cfg.Prefix, q, part)
					cmds[j][part] = p.Run(ctx, script.Counts, countKeys(k), countArgs(k)...)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("queue infos: %w", err)
	}
	now := time.Now()
	for j, info := range out {
		for _, cmd := range cmds[j] {
			if err := info.add(cmd, now); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
