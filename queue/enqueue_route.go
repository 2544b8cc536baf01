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

// The enqueue pipeline's second stage, route: each task gets its queue's
// partition (by its route key's hash, else round-robin, over the
// partitions producers route to now), and the tasks of one partition
// make a group, one script call. A group of a single Enqueue whose route
// needs nothing written or read first may take the single-task call
// (group.single). Tasks a closed partition refused are routed again
// (reroute).

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
			single: p.plain() && !p.wait && c.routeKnown(p.info.Queue)}
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
	p.info.Partition = c.partitionFor(p.info.Queue, p.route)
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

// partitionFor picks a partition of queue for a task placed by key
// (routeKey), among the partitions producers route to now (routeCount).
func (c *Client) partitionFor(queue, key string) int {
	n := c.routeCount(queue)
	if n == 1 {
		return 0
	}
	if key == "" {
		return int(c.rr.Add(1) % uint64(n))
	}
	return layout.Pick(key, n)
}

// routeKnown reports whether this client wrote queue's registry entry and
// read its layout lately: a call to it need carry neither.
func (c *Client) routeKnown(queue string) bool {
	return c.isRegistered(queue) && !c.layoutStale(queue)
}

// isRegistered reports whether queue's registry entry was written by this client.
func (c *Client) isRegistered(queue string) bool {
	v, ok := c.registered.Load(queue)
	if !ok {
		return false
	}
	r := v.(registration)
	return r.n == c.routeCount(queue) && time.Since(r.at) < registryRefresh
}

// registration is a queue's registry entry as this client wrote it.
type registration struct {
	n  int
	at time.Time
}

// registryRefresh is how often a client writes a queue's registry entry
// again as it enqueues: a queue deleted (Inspector.DeleteQueue) while a
// producer still feeds it comes back to the queue list within it.
const registryRefresh = time.Minute

// register records each queue and its partition count in the registry,
// riding in the same pipeline as the enqueue, until one write succeeded in
// this process. It returns what it wrote, to remember once sent.
func (c *Client) register(ctx context.Context, p *rcall.Pipe, groups []*group) map[string]int {
	var fresh map[string]int
	for _, g := range groups {
		n := c.routeCount(g.queue)
		if c.isRegistered(g.queue) {
			continue
		}
		if fresh == nil {
			fresh = map[string]int{}
		}
		if _, ok := fresh[g.queue]; !ok {
			p.HSet(ctx, keys.Queues(c.cfg.Prefix), g.queue, n)
			fresh[g.queue] = n
		}
	}
	return fresh
}

// remember records the registry entries a round trip wrote (register).
func (c *Client) remember(fresh map[string]int) {
	for q, n := range fresh {
		c.registered.Store(q, registration{n: n, at: time.Now()})
	}
}

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
	if err := c.readLayouts(ctx, names); err != nil {
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
