package queue

import (
	"fmt"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// depthCacheTTL is how long a producer trusts that a queue has no
// MaxDepth and enqueues with the plain script. Past it, or while the queue
// has a MaxDepth, it enqueues with enqueue_capped.lua, whose reply carries
// the queue's MaxDepth: learning it costs no round trip of its own.
const depthCacheTTL = time.Second

// depthEntry is what a producer last learned of a queue's MaxDepth and
// KeyMaxDepth.
type depthEntry struct {
	max, keyMax int64
	at          time.Time
}

// capped reports whether queue's enqueue must check its depth: it has a
// MaxDepth or KeyMaxDepth, or this client has not looked for them within
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
// k, and marks g as checked when the script checks the depth.
func (c *Client) enqueueScript(k keys.Partition, g *group) (*rcall.Script, []any) {
	args := c.enqueueArgs(k, g)
	if g.capped = c.capped(g.queue); !g.capped {
		return script.Enqueue, args
	}
	return script.EnqueueCapped, append([]any{g.partition, c.cfg.partitions(g.queue)}, args...)
}

// learnDepth takes the MaxDepth and KeyMaxDepth off a checked group's
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
	return fmt.Errorf("%w: key %q of %q has KeyMaxDepth %d (in partition %d)", ErrQueueFull, key, g.queue, g.keyMax, g.partition)
}
