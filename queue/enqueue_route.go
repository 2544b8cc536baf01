package queue

import (
	"context"
	"errors"
	"iter"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// The enqueue pipeline's second stage, route: each task gets its queue's
// partition (by its route key's hash, else round-robin, over the
// partitions producers route to now, which internal/route keeps), and
// the tasks of one partition make a group, one script call. A group of a
// single Enqueue whose route needs nothing written or read first may take
// the single-task call (group.single). Tasks a closed partition refused
// are routed again (reroute).

// group is the tasks of one queue partition: one script call.
type group struct {
	queue     string
	partition int
	tasks     []pending
	// single: the group is a single Enqueue's plain task, not waiting for
	// room, whose queue's registry entry and layout this client knows:
	// send may take the single-task call (enqueue_send_one.go)
	single bool
	capped bool  // sent with enqueue_capped.lua (admit decides)
	max    int64 // the queue's MaxDepth, when capped
	keyMax int64 // its GroupMaxDepth, when capped
}

// route picks the partition of each of b's built tasks (errs[i] nil) and
// groups them by partition. A single Enqueue's one group is b's own, so
// the common call allocates none.
func (c *Client) route(b *batch) []*group {
	if b.single {
		p := &b.tasks[0]
		c.place(p)
		b.one = group{queue: p.info.Queue, partition: p.info.Partition, tasks: b.tasks[:1],
			single: p.plain() && !p.wait && c.routes.Known(p.info.Queue)}
		b.ones[0] = &b.one
		return b.ones[:]
	}
	byKey := map[keys.Partition]*group{}
	var order []*group
	for i := range b.tasks {
		if b.errs[i] != nil {
			continue
		}
		c.place(&b.tasks[i])
		order = c.addTo(byKey, order, b.tasks[i])
	}
	return order
}

// place picks p's partition.
func (c *Client) place(p *pending) {
	p.info.Partition = c.routes.Pick(p.info.Queue, p.route)
}

// addTo adds p to its partition's group in byKey, appending a new group to
// order.
func (c *Client) addTo(byKey map[keys.Partition]*group, order []*group, p pending) []*group {
	k := keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition)
	g := byKey[k]
	if g == nil {
		g = &group{queue: p.info.Queue, partition: p.info.Partition}
		byKey[k] = g
		order = append(order, g)
	}
	g.tasks = append(g.tasks, p)
	return order
}

// closedTries bounds how often one EnqueueMany routes again the tasks a
// closed partition refused.
const closedTries = 4

// queuesOf returns the groups' queues, for the route table, without a
// slice of them: sendOnce asks on every call of many partitions.
func queuesOf(groups []*group) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, g := range groups {
			if !yield(g.queue) {
				return
			}
		}
	}
}

// anyStale reports whether the layout of a group's queue is stale.
func (c *Client) anyStale(groups []*group) bool {
	for _, g := range groups {
		if c.routes.Stale(g.queue) {
			return true
		}
	}
	return false
}

// reroute returns, routed again, the tasks of groups that a closed
// partition refused, after reading their queues' layouts afresh; nil when
// there are none, or after closedTries tries (the try-th is try), or when
// the read or ctx fails. A try past the first waits a little first: an
// operator's SetPartitions closes partitions just before it publishes the
// layout. Tasks not routed again keep ErrPartitionClosed.
func (c *Client) reroute(ctx context.Context, try int, groups []*group, errs []error) []*group {
	var refused []pending
	var names []string
	for _, g := range groups {
		for _, p := range g.tasks {
			if errors.Is(errs[p.index], ErrPartitionClosed) {
				refused = append(refused, p)
				if !slices.Contains(names, g.queue) {
					names = append(names, g.queue)
				}
			}
		}
	}
	if len(refused) == 0 || try > closedTries {
		return nil
	}
	if try > 1 {
		if err := rcall.Sleep(ctx, time.Duration(try)*refusedWait); err != nil {
			return nil
		}
	}
	if err := c.routes.Read(ctx, c.rdb, names); err != nil {
		return nil
	}
	byKey := map[keys.Partition]*group{}
	var order []*group
	for _, p := range refused {
		errs[p.index] = nil
		c.place(&p)
		order = c.addTo(byKey, order, p)
	}
	return order
}
