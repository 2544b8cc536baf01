package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// SetPartitions sets how many partitions queue has, while producers and
// workers run: the layout in the registry becomes the queue's source of
// truth over Config.Partitions. Raising it opens the new partitions:
// producers route to them within 2 seconds and workers start fetchers
// on them within their QueueRefresh. Lowering it closes the partitions
// n and above at once (enqueue refuses them and producers route again);
// workers go on serving them until they hold nothing (pending, scheduled,
// retrying, running, parked or dead), then a worker ends the drain and
// they are forgotten. Until then Inspector counts include them, and
// QueueInfo.Draining counts them. Keys that
// place a task by hash (a group, a uniqueness ID, a chosen ID) move
// partition with the count: see the architecture doc for what that costs.
// The partitions of a queue with fleet-wide limits get their quotas.
// Run one SetPartitions of a queue at a time.
func (i *Inspector) SetPartitions(ctx context.Context, queue string, n int) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	if n < 1 || n > config.MaxPartitions {
		return fmt.Errorf("%w: %d partitions for queue %q, want 1..%d", errInvalidPartitions, n, queue, config.MaxPartitions)
	}
	old, err := i.partitions(ctx, queue)
	if errors.Is(err, errQueueNotFound) {
		old, err = 0, nil
	}
	if err != nil {
		return err
	}
	var lim *LimitInfo
	if old > 0 && n > old {
		// the new partitions need the queue's limits and a quota
		if lim, err = i.LimitInfo(ctx, queue); err != nil {
			return err
		}
	}
	l := layout.Layout{Route: n, Serve: max(n, old)}
	// close and open first: a producer that reads the new layout finds the
	// partitions as it says, and one still on the old finds them refusing
	err = rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part := range l.Serve {
				k := keys.For(i.cfg.Prefix, queue, part)
				state := "open"
				if part >= n {
					state = "close"
				}
				p.Run(ctx, script.PartitionState, []string{keys.RankKey(k.Feed())}, state)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("set partitions of %q: %w", queue, err)
	}
	if lim != nil && lim.Limits != (Limits{}) {
		// written before the layout names the new partitions: limits are
		// in place when the first worker fetches there
		if err := i.writeLimits(ctx, queue, l.Serve, lim.Limits); err != nil {
			return err
		}
	}
	err = rcall.Do(ctx, i.rdb, func() error {
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, keys.Layout(i.cfg.Prefix), queue, l.String())
			p.HSet(ctx, keys.Queues(i.cfg.Prefix), queue, l.Serve)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("set partitions of %q: %w", queue, err)
	}
	return nil
}
