package redistest

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// SetPayload rewrites, in Redis, the payload of the pending task id of
// queue q (partition 0, under prefix) to payload, the rest of its message
// unchanged, in its shard and in the copy readers take (T:feed:msg): a
// task as a producer outside Go, or a writer to Redis, could
// leave it, which queue.NewTask refuses to make (a header that claims more
// than its bytes hold). The task must wait in one of the partition's
// shards, not in a group's list, and no worker may take it
// meanwhile: rewrite before a worker starts, or while the queue is paused.
func SetPayload(t testing.TB, rdb redis.UniversalClient, prefix, q, id string, payload []byte) {
	t.Helper()
	ctx := context.Background()
	k := keys.For(prefix, q, 0)
	first, _ := rdb.Get(ctx, k.First()).Int64()
	last, _ := rdb.Get(ctx, k.Last()).Int64()
	stored := wire.StoredID(id)
	for n := first; n <= last; n++ {
		shard := k.ShardPrefix() + strconv.FormatInt(n, 10)
		msgs, err := rdb.LRange(ctx, shard, 0, -1).Result()
		if err != nil {
			t.Fatalf("read %s: %v", shard, err)
		}
		for i, msg := range msgs {
			if head, ok := wire.HeadID(msg); !ok || head != stored {
				continue
			}
			var m wire.Message
			if err := wire.DecodeMessageString(msg, &m); err != nil {
				t.Fatalf("task %s: %v", id, err)
			}
			m.Payload = payload
			out := m.AppendEncode(nil, true)
			if err := rdb.LSet(ctx, shard, int64(i), out).Err(); err != nil {
				t.Fatalf("rewrite task %s: %v", id, err)
			}
			// the copy readers take, which some pending tasks have
			if n, err := rdb.HExists(ctx, k.FeedMsg(), stored).Result(); err == nil && n {
				if err := rdb.HSet(ctx, k.FeedMsg(), stored, out).Err(); err != nil {
					t.Fatalf("rewrite task %s's copy: %v", id, err)
				}
			}
			return
		}
	}
	t.Fatalf("task %s is not pending in %s's shards %d..%d", id, k.T, first, last)
}
