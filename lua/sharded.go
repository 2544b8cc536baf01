package lua

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/sharded"
)

// dummy is the item pushed to wake a blocked reader (see sharded_block.lua
// and include/dummy.lua). No method of ShardedList returns it.
const dummy = sharded.Dummy

// Side names an end of a sharded list.
type Side byte

// The two ends of a sharded list.
const (
	Left  Side = 'L'
	Right Side = 'R'
)

// defaultShardSize bounds each shard of a ShardedList when none is given.
const defaultShardSize = 1000

// maxShardSize keeps one shard's items within what one Lua unpack accepts.
const maxShardSize = 7000

// ShardedList is a list stored as a chain of bounded Redis lists, so that a
// backlog of millions never makes one huge key. Its keys are Base+":first",
// Base+":last" and Base+":s:<n>"; on Redis Cluster, Base must hold a hash tag
// ("{jobs}") so that every key, and a blocking move's destination, share a slot.
type ShardedList struct {
	Base      string
	ShardSize int // Defaults to 1000.

	beforeBlock func(shard int64) // test hook: runs between the look and the block
}

// NewShardedList returns the sharded list at base with the given shard size.
func NewShardedList(base string, shardSize int) (*ShardedList, error) {
	if shardSize < 0 || shardSize > maxShardSize {
		return nil, fmt.Errorf("%w: shard size %d, want 1..%d", ErrInvalid, shardSize, maxShardSize)
	}
	return &ShardedList{Base: base, ShardSize: shardSize}, nil
}

func (l *ShardedList) keys() []string { return []string{l.Base + ":first", l.Base + ":last"} }
func (l *ShardedList) prefix() string { return l.Base + ":s:" }

// shardKey returns the key of shard n.
func (l *ShardedList) shardKey(n int64) string { return sharded.ShardKey(l.Base, n) }

func (l *ShardedList) size() int {
	if l.ShardSize <= 0 {
		return defaultShardSize
	}
	return min(l.ShardSize, maxShardSize)
}

// Push adds items at one end in one call; read from that end, they come
// out in the order given.
func (l *ShardedList) Push(ctx context.Context, c redis.Scripter, side Side, items ...string) error {
	if len(items) == 0 {
		return nil
	}
	args := make([]any, 0, 3+len(items))
	args = append(args, l.prefix(), l.size(), string(side))
	for _, it := range items {
		args = append(args, it)
	}
	return shardedPush.Run(ctx, c, l.keys(), args...).Err()
}

// Pop removes up to n items from one end in one call, stepping past any
// number of emptied shards. It returns no items (and no error) when the list is empty.
func (l *ShardedList) Pop(ctx context.Context, c redis.Scripter, side Side, n int) ([]string, error) {
	items, _, err := l.pop(ctx, c, side, n, "")
	return items, err
}

func (l *ShardedList) pop(ctx context.Context, c redis.Scripter, side Side, n int, dest string) ([]string, int64, error) {
	keys := l.keys()
	if dest != "" {
		keys = append(keys, dest)
	}
	res, err := shardedPop.Run(ctx, c, keys, l.prefix(), n, string(side)).Slice()
	if err != nil {
		return nil, 0, err
	}
	shard, _ := res[0].(int64)
	items := make([]string, 0, len(res)-1)
	for _, v := range res[1:] {
		items = append(items, v.(string))
	}
	return items, shard, nil
}

// Len returns the number of items in the list.
func (l *ShardedList) Len(ctx context.Context, c redis.Scripter) (int64, error) {
	return shardedLen.Run(ctx, c, l.keys(), l.prefix()).Int64()
}

// BlockingPop moves one item from one end onto the tail of dest (a list in
// the same slot) and returns it, waiting up to timeout for one to arrive.
// It waits in slices of at most one second: each slice pipelines the
// sharded_block helper with BLMOVE on the end shard, so a reader never
// sleeps on a shard that items no longer reach. BLMOVE waits in whole
// seconds, so the last slice may end up to a second after timeout. ok is
// false when the timeout passed with no item. A slice whose helper meets
// an empty script cache loads it for the next slice and may sleep its
// full second on a stale shard.
func (l *ShardedList) BlockingPop(ctx context.Context, c redis.UniversalClient, side Side, dest string, timeout time.Duration) (item string, ok bool, err error) {
	deadline := time.Now().Add(timeout)
	for {
		items, shard, err := l.pop(ctx, c, side, 1, dest)
		if err != nil {
			return "", false, err
		}
		if len(items) > 0 {
			return items[0], true, nil
		}
		if time.Until(deadline) <= 0 {
			return "", false, nil
		}
		if l.beforeBlock != nil {
			l.beforeBlock(shard)
		}
		item, err := l.blockSlice(ctx, c, side, shard, dest)
		if err == nil {
			return item, true, nil
		}
		if !errors.Is(err, redis.Nil) {
			return "", false, err
		}
	}
}

// blockSlice runs one slice of a blocking pop (see sharded.BlockSlice).
func (l *ShardedList) blockSlice(ctx context.Context, c redis.UniversalClient, side Side, shard int64, dest string) (string, error) {
	return sharded.BlockSlice(ctx, c, shardedBlock, l.Base, side == Left, shard, dest)
}
