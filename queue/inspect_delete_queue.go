package queue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// DeleteQueue removes queue: every key of every partition (tasks in every
// state, their records, feeds, history, limits, uniqueness locks) and its
// registry entry, so it leaves the queue list. Without force it refuses a
// queue that holds tasks in any state (ErrQueueInUse, with the counts)
// or that a live worker serves (ErrQueueInUse, naming the workers); stop
// those workers first, or they register the queue again. A queue the
// registry does not know is ErrNotFound. A producer that goes on
// enqueueing to a deleted queue registers it again within a minute.
//
// The keys of a partition share a hash tag, so they are found with a SCAN
// for that tag (on every master of a Cluster): the cost grows with the
// whole keyspace, which is fine for an operator's occasional action but
// not for a hot path.
func (i *Inspector) DeleteQueue(ctx context.Context, queue string, force bool) error {
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return err
	}
	if !force {
		qi, err := i.QueueInfo(ctx, queue)
		if err != nil {
			return err
		}
		if total := qi.Pending + qi.Active + qi.Scheduled + qi.Retry + qi.Dead + qi.Succeeded + qi.Waiting; total > 0 {
			return fmt.Errorf("%w: %q holds %d tasks (pending %d, active %d, scheduled %d, retry %d, dead %d, succeeded %d, waiting %d); delete with force to drop them",
				errQueueNotEmpty, queue, total, qi.Pending, qi.Active, qi.Scheduled, qi.Retry, qi.Dead, qi.Succeeded, qi.Waiting)
		}
		serving, err := i.servingWorkers(ctx, queue)
		if err != nil {
			return err
		}
		if len(serving) > 0 {
			return fmt.Errorf("%w: %q is served by live workers %s; stop them first (they would register it again)",
				ErrQueueInUse, queue, strings.Join(serving, ", "))
		}
	}
	for part := range n {
		if err := i.deleteKeys(ctx, keys.For(i.cfg.Prefix, queue, part).T); err != nil {
			return fmt.Errorf("delete queue %q: %w", queue, err)
		}
	}
	err = rcall.Do(ctx, i.rdb, func() error {
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, keys.Queues(i.cfg.Prefix), queue)
			p.HDel(ctx, keys.Layout(i.cfg.Prefix), queue) // a new queue of that name starts from its Config
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("delete queue %q from the registry: %w", queue, err)
	}
	return nil
}

// servingWorkers returns the live workers whose status says they serve
// queue.
func (i *Inspector) servingWorkers(ctx context.Context, queue string) ([]string, error) {
	live, err := i.liveStatuses(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for id, st := range live {
		if _, ok := st.Queues[queue]; ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// deleteKeys deletes every key whose name starts with the hash tag tag.
func (i *Inspector) deleteKeys(ctx context.Context, tag string) error {
	pattern := globEscape(tag) + "*"
	del := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			ks, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			if len(ks) > 0 {
				// one hash tag: one slot, so one UNLINK even on a Cluster
				if err := c.Unlink(ctx, ks...).Err(); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	return rcall.Do(ctx, i.rdb, func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if cc, ok := i.rdb.(*redis.ClusterClient); ok {
			return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return del(ctx, c) })
		}
		return del(ctx, i.rdb)
	})
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
