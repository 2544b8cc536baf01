package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// The enqueue pipeline's third stage, admit: a queue's MaxDepth and
// GroupMaxDepth are checked by the script that pushes, atomically with the
// push (enqueue_capped.lua), unless this client learned within
// depthCacheTTL that the queue has neither; a task a full queue refused
// fails with ErrQueueFull, or, when it asked to (WaitForRoom), is sent
// again until there is room.

// WaitForRoom makes Enqueue and EnqueueMany wait, within their context,
// for room in a queue at its Limits.MaxDepth instead of failing with
// ErrQueueFull. The client polls with a backoff of up to
// 200ms between tries. When the context ends while the client
// sleeps between tries, the task's error wraps both ErrQueueFull and the
// context's error; when it ends (or Redis fails) during a try, that try's
// outcome is unknown, and the task's error wraps the context's (or
// Redis's) error alone: with TaskID, enqueueing it again is safe. Either
// way the call's other tasks keep their results.
func WaitForRoom() Option {
	return func(o *options) error {
		o.waitRoom = true
		return nil
	}
}

// Polling bounds of WaitForRoom: the first retry comes after minRoomPoll,
// and each wait doubles up to maxRoomPoll.
const (
	minRoomPoll = 5 * time.Millisecond
	// maxRoomPoll is the longest a WaitForRoom enqueue sleeps between two
	// tries, so it takes room at most this long after a worker made it.
	maxRoomPoll = 200 * time.Millisecond
)

// admit sends the groups (send) under their queues' depth limits, then
// sends again, until ctx ends, the tasks that asked to wait and were
// refused for a full queue: one round trip per try for all of them. A try
// that fails leaves only its own tasks' outcome unknown.
func (c *Client) admit(ctx context.Context, groups []*group, b *batch) error {
	c.checkDepth(groups)
	if err := c.send(ctx, groups, b); err != nil {
		return err
	}
	delay := minRoomPoll
	for {
		waiting := refusedWaiting(groups, b.errs)
		if len(waiting) == 0 {
			return nil
		}
		t := time.NewTimer(delay/2 + rand.N(delay/2+1)) // jittered: waiting producers spread out
		select {
		case <-ctx.Done():
			t.Stop()
			setErrs(waiting, b.errs, func(g *group, err error) error {
				return fmt.Errorf("%w (waited for room: %w)", err, context.Cause(ctx))
			})
			return nil
		case <-t.C:
		}
		delay = min(2*delay, maxRoomPoll)
		setErrs(waiting, b.errs, func(*group, error) error { return nil })
		c.checkDepth(waiting)
		if err := c.send(ctx, waiting, b); err != nil {
			setErrs(waiting, b.errs, func(g *group, _ error) error {
				return fmt.Errorf("waiting for room in %q, a try's outcome is unknown: %w", g.queue, err)
			})
			return nil
		}
	}
}

// setErrs sets the error of each task of groups to what f makes of it.
func setErrs(groups []*group, errs []error, f func(*group, error) error) {
	for _, g := range groups {
		for _, p := range g.tasks {
			errs[p.index] = f(g, errs[p.index])
		}
	}
}

// refusedWaiting returns, grouped as sent, the tasks that asked to wait
// and were refused for a full queue.
func refusedWaiting(groups []*group, errs []error) []*group {
	var out []*group
	for _, g := range groups {
		var ps []pending
		for _, p := range g.tasks {
			if p.wait && errors.Is(errs[p.index], ErrQueueFull) {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			out = append(out, &group{queue: g.queue, partition: g.partition, tasks: ps})
		}
	}
	return out
}

// depthCacheTTL is how long a producer trusts that a queue has no
// MaxDepth and enqueues with the plain script. Past it, or while the queue
// has a MaxDepth, it enqueues with enqueue_capped.lua, whose reply carries
// the queue's MaxDepth: learning it costs no round trip of its own.
const depthCacheTTL = time.Second

// depthEntry is what a producer last learned of a queue's MaxDepth and
// GroupMaxDepth.
type depthEntry struct {
	max, keyMax int64
	at          time.Time
}

// checkDepth marks the groups whose call must check their queue's depth.
func (c *Client) checkDepth(groups []*group) {
	for _, g := range groups {
		g.capped = c.capped(g.queue)
	}
}

// capped reports whether queue's enqueue must check its depth: it has a
// MaxDepth or GroupMaxDepth, or this client has not looked for them within
// depthCacheTTL.
func (c *Client) capped(queue string) bool {
	v, ok := c.depth.Load(queue)
	if !ok {
		return true
	}
	e := v.(depthEntry)
	return e.max > 0 || e.keyMax > 0 || time.Since(e.at) >= depthCacheTTL
}

// enqueueScript returns the script and ARGV that enqueue g on partition
// k: enqueue_capped.lua, with the partition and the queue's partition
// count, when g's call checks the depth.
func (c *Client) enqueueScript(k keys.Partition, g *group) (*rcall.Script, []any) {
	args := c.enqueueArgs(k, g)
	if !g.capped {
		return script.Enqueue, args
	}
	return script.EnqueueCapped, append([]any{g.partition, c.routes.Count(g.queue)}, args...)
}

// learnDepth takes the MaxDepth and GroupMaxDepth off a checked group's
// reply and caches them, returning the per-task codes.
func (c *Client) learnDepth(g *group, codes []int64) ([]int64, error) {
	if !g.capped {
		return codes, nil
	}
	n := len(g.tasks)
	if len(codes) != n+2 {
		return nil, fmt.Errorf("enqueue %q: %d replies for %d tasks", g.queue, len(codes), n)
	}
	g.max, g.keyMax = codes[n], codes[n+1]
	c.depth.Store(g.queue, depthEntry{max: g.max, keyMax: g.keyMax, at: time.Now()})
	return codes[:n], nil
}

// queueFull is the error of a task refused by g's partition.
func (g *group) queueFull() error {
	return fmt.Errorf("%w: %q has MaxDepth %d (partition %d holds its share)", ErrQueueFull, g.queue, g.max, g.partition)
}

// keyFull is the error of a task of key refused by g's partition.
func (g *group) keyFull(key string) error {
	return fmt.Errorf("%w: key %q of %q has GroupMaxDepth %d (in partition %d)", ErrQueueFull, key, g.queue, g.keyMax, g.partition)
}
