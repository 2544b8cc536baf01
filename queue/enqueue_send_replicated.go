package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// sendReplicated is send under Config.WaitReplicas: each group's enqueue
// script and a WAIT run on the master of its partition, one round trip per
// partition, in order. Tasks whose write fewer replicas acknowledged in
// time get ErrNotReplicated in errs, and their infos, since they were
// enqueued.
func (c *Client) sendReplicated(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) error {
	if err := c.registerAlone(ctx, groups); err != nil {
		rcall.Reroute(c.rdb, err) // a cluster's slot map may be stale
		return fmt.Errorf("enqueue %q: %w", groups[0].queue, redisError(err))
	}
	for _, g := range groups {
		k := keys.For(c.cfg.Prefix, g.queue, g.partition)
		var cmd *redis.Cmd
		var acked int
		err := rcall.Do(ctx, c.rdb, func() error {
			var err error
			script, args := c.enqueueScript(k, g)
			cmd, acked, err = rcall.RunReplicated(ctx, c.rdb, script, enqueueKeys(k),
				c.cfg.WaitReplicas, c.cfg.WaitTimeout, args...)
			return err
		})
		if err != nil {
			rcall.Reroute(c.rdb, err)
			return fmt.Errorf("enqueue %q: %w", g.queue, redisError(err))
		}
		if err := c.collect(g, cmd, infos, errs); err != nil {
			return err
		}
		if acked >= c.cfg.WaitReplicas {
			continue
		}
		for _, p := range g.tasks {
			if errs[p.index] == nil {
				errs[p.index] = fmt.Errorf("%w: task %q in queue %q partition %d: %d of %d replicas within %v",
					ErrNotReplicated, p.info.ID, g.queue, g.partition, acked, c.cfg.WaitReplicas, c.cfg.WaitTimeout)
			}
		}
	}
	return nil
}

// allRegistered reports whether this client wrote every group's registry entry lately.
func (c *Client) allRegistered(groups []*group) bool {
	for _, g := range groups {
		if !c.routes.Registered(g.queue) {
			return false
		}
	}
	return true
}

// registerAlone writes the registry entries of the groups' queues that this
// client has not written lately, and reads their stale layouts, in one call of their own: under
// WaitReplicas the enqueue scripts go to their partitions' masters.
func (c *Client) registerAlone(ctx context.Context, groups []*group) error {
	var fresh map[string]int
	var learn func()
	if !c.anyStale(groups) && c.allRegistered(groups) {
		return nil
	}
	err := rcall.Do(ctx, c.rdb, func() error {
		return rcall.Pipelined(ctx, c.rdb, func(p *rcall.Pipe) error {
			fresh = c.routes.Register(ctx, p, queuesOf(groups))
			learn = c.routes.Learn(ctx, p, queuesOf(groups))
			return nil
		})
	})
	if err != nil {
		return err
	}
	if learn != nil {
		learn()
	}
	c.routes.Remember(fresh)
	return nil
}
