package queue

import (
	"fmt"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/lua"
)

// depthCacheTTL is how long a producer trusts that a queue has no
// MaxDepth and enqueues with the plain script. Past it, or while the queue
// has a MaxDepth, it enqueues with enqueue_capped.lua, whose reply carries
// the queue's MaxDepth: learning it costs no round trip of its own.
const depthCacheTTL = time.Second

// codeQueueFull is enqueue_capped.lua's code for a task refused because
// its partition is at its share of MaxDepth.
const codeQueueFull = -3

// depthEntry is what a producer last learned of a queue's MaxDepth.
type depthEntry struct {
	max int64
	at  time.Time
}

// capped reports whether queue's enqueue must check its depth: it has a
// MaxDepth, or this client has not looked for one within depthCacheTTL.
func (c *Client) capped(queue string) bool {
	v, ok := c.depth.Load(queue)
	if !ok {
		return true
	}
	e := v.(depthEntry)
	return e.max > 0 || time.Since(e.at) >= depthCacheTTL
}

// enqueueScript returns the script and ARGV that enqueue g on partition
// k, and marks g as checked when the script checks the depth.
func (c *Client) enqueueScript(k keys.Partition, g *group) (*lua.Script, []any) {
	args := c.enqueueArgs(k, g)
	if g.capped = c.capped(g.queue); !g.capped {
		return lua.Enqueue, args
	}
	return lua.EnqueueCapped, append([]any{g.partition, c.cfg.partitions(g.queue)}, args...)
}

// learnDepth takes the MaxDepth off a checked group's reply and caches
// it, returning the per-task codes.
func (c *Client) learnDepth(g *group, codes []int64) ([]int64, error) {
	if !g.capped {
		return codes, nil
	}
	if len(codes) != len(g.tasks)+1 {
		return nil, fmt.Errorf("enqueue %q: %d replies for %d tasks", g.queue, len(codes), len(g.tasks))
	}
	g.max = codes[len(codes)-1]
	c.depth.Store(g.queue, depthEntry{max: g.max, at: time.Now()})
	return codes[:len(g.tasks)], nil
}

// queueFull is the error of a task refused by g's partition.
func (g *group) queueFull() error {
	return fmt.Errorf("%w: %q has MaxDepth %d (partition %d holds its share)", ErrQueueFull, g.queue, g.max, g.partition)
}
