package queue

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// TestEnqueueRefusedWhileShardsMigrate: a partition's slot is half moved,
// its shards on the new master and every other key still on the old one
// (MIGRATE moves keys in any order). Its declared keys all still exist
// on the old master (a drained head's T:first, a keyed task's feed copy, a
// scheduled task's message and record), so without the guard key Redis
// would start enqueue.lua there and stop it at the first shard it reaches
// ("non local key"), after the batch's scheduled task was written: a half
// run, reported as an error of unknown outcome, whose retry enqueues that
// task twice. With the guard, batch and single Enqueues are refused whole
// (TRYAGAIN, safe to retry) while the slot is open, nothing is written on
// either side, the migration completes, and enqueueing goes on with every
// acknowledged task there.
func TestEnqueueRefusedWhileShardsMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	cfg := Config{Prefix: redistest.Prefix(t), ShardSize: 4}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	acked := 0
	enqueue := func(opts ...Option) {
		t.Helper()
		_, err := client.Enqueue(ctx, NewRawTask("t", []byte("p"), append([]Option{In("q")}, opts...)...))
		must(t, err)
		acked++
	}
	// the head shard drained once, so T:first exists
	for range 8 {
		enqueue()
	}
	n, err := insp.DeleteAllTasks(ctx, "q", StatePending)
	if err != nil || n != 8 {
		t.Fatalf("DeleteAllTasks = %d, %v; want the 8 pending", n, err)
	}
	acked -= 8
	enqueue(Group("k"))           // keeps a copy in T:feed:msg
	enqueue(ProcessIn(time.Hour)) // T:scheduled, T:msg, T:state
	for range 10 {
		enqueue()
	}

	k := keys.For(cfg.Prefix, "q", 0)
	first, err := rdb.Get(ctx, k.First()).Int()
	must(t, err)
	last, err := rdb.Get(ctx, k.Last()).Int()
	must(t, err)
	var shards []string
	for n := first; n <= last; n++ {
		shards = append(shards, k.ShardPrefix()+strconv.Itoa(n))
	}
	if len(shards) < 3 {
		t.Fatalf("shards %v; want the 3 that 12 pending tasks fill", shards)
	}
	slot := cl.Slot(t, k.T)
	from := cl.MasterOf(t, slot)
	to := cl.Nodes[0] // as halfMigrate picks it
	if to == from {
		to = cl.Nodes[1]
	}
	src, dst := from.Client(t), to.Client(t)
	finish := halfMigrate(t, cl, k.T, shards...)
	for _, key := range []string{k.FeedMsg(), k.Scheduled(), k.Msg(), k.State(), k.First(), k.Last()} {
		if n, err := src.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Fatalf("%s on the old master: %d, %v; want it there, as the test needs", key, n, err)
		}
	}
	lens := func() map[string]int64 {
		out := map[string]int64{}
		for _, key := range shards {
			// the new master answers for an importing slot only after ASKING
			var n *redis.IntCmd
			_, err := dst.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "ASKING")
				n = p.LLen(ctx, key)
				return nil
			})
			must(t, err)
			out[key] = n.Val()
		}
		return out
	}
	before := lens()

	scheduled := func() int64 {
		n, err := src.ZCard(ctx, k.Scheduled()).Result()
		must(t, err)
		return n
	}
	sched := scheduled()
	// refused whole: TRYAGAIN once the caller's deadline stops the retries
	// (or the deadline itself, when it falls during a try), never Redis
	// stopping the script half way ("non local key")
	refusedWhole := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "TRYAGAIN") && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s while the shards had moved = %v; want it refused whole (TRYAGAIN)", what, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// a scheduled task first: enqueue.lua writes it before it reaches a
	// shard, so a script Redis stops at the shard would have half run
	_, err = client.EnqueueMany(short, []*Task{
		NewRawTask("t", []byte("later"), In("q"), ProcessIn(time.Hour)),
		NewRawTask("t", []byte("now"), In("q")),
	})
	refusedWhole("EnqueueMany", err)
	if got := scheduled(); got != sched {
		t.Fatalf("%d scheduled tasks after the refused batch, were %d: it half ran", got, sched)
	}
	short2, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	_, err = client.Enqueue(short2, NewRawTask("t", []byte("single"), In("q")))
	refusedWhole("Enqueue", err)
	for _, key := range shards {
		// a key missing from a migrating slot is answered with ASK
		n, err := src.Exists(ctx, key).Result()
		if err != nil && !strings.HasPrefix(err.Error(), "ASK ") {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("shard %s made anew on the old master", key)
		}
	}
	if got := lens(); len(got) != len(before) || !sameLens(got, before) {
		t.Fatalf("shard lengths on the new master %v, were %v: a refused call wrote", got, before)
	}

	finish() // fails on BUSYKEY, had a shard been made anew on the old master
	enqueue()
	qi, err := insp.QueueInfo(ctx, "q")
	must(t, err)
	if got := qi.Pending + qi.Scheduled; got != int64(acked) {
		t.Fatalf("after the migration %d pending + %d scheduled, want the %d acknowledged", qi.Pending, qi.Scheduled, acked)
	}
}

func sameLens(a, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
