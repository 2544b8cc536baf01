package lua_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/lua"
)

func ExampleShardedList() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	// shards of two items, for the example; the hash tag keeps every key
	// in one Redis Cluster slot
	jobs, err := lua.NewShardedList("{jobs}", 2)
	if err != nil {
		log.Fatal(err)
	}
	if err := jobs.Push(ctx, rdb, lua.Right, "a", "b", "c", "d", "e"); err != nil {
		log.Fatal(err)
	}
	n, err := jobs.Len(ctx, rdb)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "items")

	first, err := jobs.Pop(ctx, rdb, lua.Left, 2)
	if err != nil {
		log.Fatal(err)
	}
	last, err := jobs.Pop(ctx, rdb, lua.Right, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first, last)

	// move the next item onto an in-flight list, waiting up to a second for one
	item, ok, err := jobs.BlockingPop(ctx, rdb, lua.Left, "{jobs}:inflight", time.Second)
	if err != nil {
		log.Fatal(err)
	}
	inflight, _ := rdb.LRange(ctx, "{jobs}:inflight", 0, -1).Result()
	n, _ = jobs.Len(ctx, rdb)
	fmt.Println(item, ok, inflight, n)
	// Output:
	// 5 items
	// [a b] [e]
	// c true [c] 1
}

func ExampleFairSemaphore() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	// two slots; a holder that crashes frees its slot after the TTL
	sem := &lua.FairSemaphore{Key: "{billing}:sem", Limit: 2, TTL: 30 * time.Second}
	for _, holder := range []string{"worker-1", "worker-2", "worker-3"} {
		ok, err := sem.Acquire(ctx, rdb, holder, 0)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(holder, ok)
	}

	if err := sem.Release(ctx, rdb, "worker-1"); err != nil {
		log.Fatal(err)
	}
	ok, _ := sem.Acquire(ctx, rdb, "worker-3", 0)
	holders, _ := sem.Holders(ctx, rdb)
	fmt.Println("worker-3", ok, holders)

	// a holder whose slot is gone must stop what the slot guarded
	err := sem.Refresh(ctx, rdb, "worker-1")
	fmt.Println(errors.Is(err, lua.ErrNotHeld))
	// Output:
	// worker-1 true
	// worker-2 true
	// worker-3 false
	// worker-3 true [worker-2 worker-3]
	// true
}

func ExampleRankedFeed() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	feed := &lua.RankedFeed{Key: "{events}:recent", Cap: 4} // keeps the newest 4
	if _, _, err := feed.Append(ctx, rdb, "e1", "e2", "e3"); err != nil {
		log.Fatal(err)
	}
	first, trimmed, err := feed.Append(ctx, rdb, "e4", "e5")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("e4 has rank", first, "trimmed", trimmed)

	// page oldest first: each page starts after the last member seen
	marker := ""
	for {
		page, err := feed.Read(ctx, rdb, marker, 2, lua.Oldest)
		if err != nil {
			log.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		fmt.Println(page)
		marker = page[len(page)-1].Member
	}

	newest, _ := feed.Read(ctx, rdb, "", 1, lua.Newest)
	fmt.Println(newest)
	_, err = feed.Read(ctx, rdb, "e1", 2, lua.Oldest) // trimmed away
	fmt.Println(errors.Is(err, lua.ErrMarkerNotFound))
	// Output:
	// e4 has rank 4 trimmed [e1]
	// [{e2 2} {e3 3}]
	// [{e4 4} {e5 5}]
	// [{e5 5}]
	// true
}

func ExampleSafeCounter() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	// invoice numbers: issued numbers are recorded in "{inv}:issued", the
	// counter's safe start point should the counter itself be lost
	seq := &lua.SafeCounter{Key: "{inv}:seq", StartFrom: "{inv}:issued"}

	_, err := seq.IncrBy(ctx, rdb, 1) // never initialised, nothing to restore from
	fmt.Println(errors.Is(err, lua.ErrCounterMissing))

	if _, err := seq.Init(ctx, rdb, 1000); err != nil {
		log.Fatal(err)
	}
	n, err := seq.IncrBy(ctx, rdb, 1)
	if err != nil {
		log.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, "{inv}:issued", redis.Z{Score: float64(n), Member: fmt.Sprint("INV-", n)}).Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)

	rdb.Del(ctx, seq.Key) // evicted, or lost in a failover
	n, err = seq.IncrBy(ctx, rdb, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n) // restored from 1001, not restarted at 0
	// Output:
	// true
	// 1001
	// 1002
}
