package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
)

// layoutRefresh is how long a Client trusts what it read of a queue's
// partition layout (Inspector.SetPartitions) before it reads it again,
// with the next enqueue to that queue: a raised count reaches every
// producer within it. A lowered one takes effect at once: the removed
// partitions refuse enqueues (codes.EnqClosed) and the client routes again.
const layoutRefresh = 2 * time.Second

// closedTries bounds how often one EnqueueMany routes again the tasks a
// closed partition refused.
const closedTries = 4

// layoutEntry is what a Client last read of a queue's layout.
type layoutEntry struct {
	l   layout.Layout
	set bool // the operator set one; else Config.Partitions rules
	at  time.Time
}

// routeCount returns how many partitions this client routes queue's new
// tasks to: the layout's route count when an operator set one, else the
// Config's count.
func (c *Client) routeCount(queue string) int {
	if v, ok := c.layouts.Load(queue); ok && v.(layoutEntry).set {
		return v.(layoutEntry).l.Route
	}
	return c.cfg.partitions(queue)
}

// staleLayouts returns the groups' queues whose layout this client has
// not read within layoutRefresh.
func (c *Client) staleLayouts(groups []*group) []string {
	var stale []string
	for _, g := range groups {
		if c.layoutStale(g.queue) && !slices.Contains(stale, g.queue) {
			stale = append(stale, g.queue)
		}
	}
	return stale
}

// layoutStale reports whether queue's layout was not read within layoutRefresh.
func (c *Client) layoutStale(queue string) bool {
	v, ok := c.layouts.Load(queue)
	return !ok || time.Since(v.(layoutEntry).at) >= layoutRefresh
}

// learnLayouts adds to p a read of the stale layouts of the groups'
// queues, riding in the enqueue's round trip, and returns what stores the
// answer once p ran; nil when none is stale. The tasks of this call are
// routed already: a raised count applies from the next call.
func (c *Client) learnLayouts(ctx context.Context, p redis.Pipeliner, groups []*group) func() {
	stale := c.staleLayouts(groups)
	if len(stale) == 0 {
		return nil
	}
	cmd := p.HMGet(ctx, keys.Layout(c.cfg.Prefix), stale...)
	return func() {
		if vals, err := cmd.Result(); err == nil {
			c.storeLayouts(stale, vals)
		}
	}
}

// readLayouts reads the layouts of queues in a round trip of its own.
func (c *Client) readLayouts(ctx context.Context, queues []string) error {
	var vals []any
	err := rcall.Do(ctx, c.rdb, func() (err error) {
		vals, err = c.rdb.HMGet(ctx, keys.Layout(c.cfg.Prefix), queues...).Result()
		return err
	})
	if err != nil {
		return fmt.Errorf("read partition layout: %w", redisError(err))
	}
	c.storeLayouts(queues, vals)
	return nil
}

// storeLayouts caches an HMGET reply of the layouts of queues.
func (c *Client) storeLayouts(queues []string, vals []any) {
	now := time.Now()
	for j, q := range queues {
		e := layoutEntry{at: now}
		if v, ok := vals[j].(string); ok {
			if l, err := layout.Parse(v); err == nil {
				e.l, e.set = l, true
			} else {
				c.cfg.Logger.Warn("ignoring a bad partition layout", "queue", q, "err", err)
			}
		}
		c.layouts.Store(q, e)
	}
}

// regroup picks the partitions of tasks again and groups them by partition.
func (c *Client) regroup(tasks []pending) []*group {
	byKey := map[keys.Partition]*group{}
	var order []*group
	for _, p := range tasks {
		p.info.Partition = c.partitionFor(p.info.Queue, p.route)
		k := keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition)
		g := byKey[k]
		if g == nil {
			g = &group{queue: p.info.Queue, partition: p.info.Partition}
			byKey[k] = g
			order = append(order, g)
		}
		g.tasks = append(g.tasks, p)
	}
	return order
}

// reroute sends again the tasks that closed partitions refused, after
// reading their queues' layouts afresh, a few times with a short wait (an
// operator's SetPartitions closes partitions just before it publishes the
// layout). Those still refused keep ErrPartitionClosed.
func (c *Client) reroute(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) error {
	for try := 1; try <= closedTries; try++ {
		var refused []pending
		queues := map[string]bool{}
		for _, g := range groups {
			for _, p := range g.tasks {
				if errors.Is(errs[p.index], ErrPartitionClosed) {
					refused = append(refused, p)
					queues[g.queue] = true
				}
			}
		}
		if len(refused) == 0 {
			return nil
		}
		if try > 1 {
			if err := rcall.Sleep(ctx, time.Duration(try)*refusedWait); err != nil {
				return nil // the refused keep their error
			}
		}
		names := make([]string, 0, len(queues))
		for q := range queues {
			names = append(names, q)
		}
		if err := c.readLayouts(ctx, names); err != nil {
			return nil
		}
		for _, p := range refused {
			errs[p.index] = nil
		}
		groups = c.regroup(refused)
		if err := c.send(ctx, groups, infos, errs); err != nil {
			return err
		}
	}
	return nil
}
