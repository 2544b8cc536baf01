package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/flow"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestDeliverTwice: an outbox entry delivered again (a deliverer died
// between the enqueue and the removal) enqueues nothing more; an entry
// whose delivery does not decode, or is gone, is removed.
func TestDeliverTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	env := &flow.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	m := &wire.Message{ID: wire.NewID(), Type: "t", EnqueuedAt: 1}
	msg, _ := m.Encode()
	enc, err := wire.EncodeDelivery(&wire.Delivery{Queue: "q", Partitions: 1, ID: m.ID, Msg: msg})
	if err != nil {
		t.Fatal(err)
	}
	h := keys.Home(prefix, 3)
	put := func(id, entry string) {
		t.Helper()
		if err := rdb.ZAdd(ctx, h.Out(), redisZ(id)).Err(); err != nil {
			t.Fatal(err)
		}
		if entry != "" {
			if err := rdb.HSet(ctx, h.OutMsg(), id, entry).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		put(m.ID, string(enc))
		n, err := env.Deliver(ctx, []int{3})
		if err != nil || n != 1 {
			t.Fatalf("Deliver: %d, %v", n, err)
		}
	}
	put("junk", "not a delivery")
	put("gone", "")
	if n, err := env.Deliver(ctx, []int{3}); err != nil || n != 2 {
		t.Fatalf("Deliver of a junk and a gone entry: %d, %v", n, err)
	}
	if n := rdb.ZCard(ctx, h.Out()).Val() + rdb.HLen(ctx, h.OutMsg()).Val(); n != 0 {
		t.Fatalf("outbox keeps %d entries", n)
	}
	insp, err := queue.NewInspector(rdb, queue.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	qi, err := insp.QueueInfo(ctx, "q")
	if err != nil || qi.Pending != 1 {
		t.Fatalf("queue after three deliveries: %+v, %v", qi, err)
	}
}

// TestForwardDropsJunk: a notification that does not decode, or names no
// home, leaves its list without reaching any home.
func TestForwardDropsJunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	env := &flow.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	list := keys.For(prefix, "q", 0).Notify()
	if err := rdb.RPush(ctx, list, "junk", "\x95\xa4x99:y\xa1i\xa1s\xa0\xa0").Err(); err != nil {
		t.Fatal(err)
	}
	n, due, err := env.Forward(ctx, []string{list})
	if err != nil || n != 2 || len(due) != 0 {
		t.Fatalf("Forward: %d read, due %v, %v", n, due, err)
	}
	if l := rdb.LLen(ctx, list).Val(); l != 0 {
		t.Fatalf("list keeps %d entries", l)
	}
}

func redisZ(member string) redis.Z { return redis.Z{Score: 0, Member: member} }
