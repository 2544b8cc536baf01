// Package sharded holds the one step of a sharded list's blocking pop that
// both the lua.ShardedList primitive and the worker's fetch run.
package sharded

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
)

// Dummy is the item the sharded_block helper pushes to wake a blocked
// reader (lua/include/dummy.lua). Its first byte, 0xc1, never begins valid
// msgpack, so no task is ever mistaken for it.
const Dummy = "\xc1shardq:dummy"

// ShardKey returns the key of shard n of the sharded list at base.
func ShardKey(base string, n int64) string { return fmt.Sprintf("%s:s:%d", base, n) }

// BlockSlice runs one slice of a blocking pop, for a caller with a loop of
// its own: helper (the sharded_block script) and a BLMOVE of at most a
// second from shard onto the tail of dest, in one round trip. shard is the
// end shard at the popped side, the number base+":first" (left) or
// base+":last" (right) holds when a pop found the list empty. It returns
// the item, or redis.Nil when the slice ended with nothing or with the
// dummy, which it takes out of dest again.
func BlockSlice(ctx context.Context, c redis.UniversalClient, helper *rcall.Script, base string, left bool, shard int64, dest string) (string, error) {
	src := ShardKey(base, shard)
	pos, side := "RIGHT", "R"
	if left {
		pos, side = "LEFT", "L"
	}
	// A plain pipeline, not Pipelined: the helper must run before the move,
	// and rerunning it after the move would leave a dummy nobody takes.
	pipe := c.Pipeline()
	wake := helper.EvalSha(ctx, pipe, []string{base + ":first", base + ":last", src}, shard, side)
	move := pipe.BLMove(ctx, src, dest, pos, "RIGHT", time.Second)
	_, _ = pipe.Exec(ctx)
	if err := wake.Err(); err != nil {
		if !rcall.IsNoScript(err) {
			return "", err
		}
		// The cache was flushed: load the helper for the next slice. The
		// move still ran, at worst blocking for one slice.
		if err := helper.Load(ctx, c); err != nil {
			return "", err
		}
	}
	item, err := move.Result()
	if err != nil {
		return "", err
	}
	if item == Dummy {
		// The dummy landed in dest: take it out again (from the tail, where BLMOVE put it).
		if err := c.LRem(ctx, dest, -1, Dummy).Err(); err != nil {
			return "", err
		}
		return "", redis.Nil
	}
	return item, nil
}
