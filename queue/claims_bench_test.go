package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// claimTasks is how many TaskID claims BenchmarkClaims makes.
const claimTasks = 100_000

// BenchmarkClaims measures what the TaskID claims cost (issue 28): the
// bytes one claim holds in Redis ("memory": used_memory before and after
// deleting 100,000 claims, so the tasks' own bytes cancel out), and how
// long moving a slot full of claims to another master takes ("migrate":
// one partition's 100,000 tasks and claims on a 3-master cluster, moved
// by MIGRATE in batches of 100 keys; "claims-share" is the claims' part of
// the keys moved). Run it alone, with -benchtime 1x.
func BenchmarkClaims(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		for range b.N {
			bn := setupTB(b, Config{})
			fillClaims(b, bn.client, "claims")
			before := usedMemoryTB(b, bn.rdb)
			k := keys.For(bn.cfg.Prefix, "claims", 0)
			n := deleteMatching(b, bn.rdb, k.T+":id:*")
			if n != claimTasks {
				b.Fatalf("deleted %d claims, want %d", n, claimTasks)
			}
			after := usedMemoryTB(b, bn.rdb)
			b.ReportMetric(float64(before-after)/float64(n), "bytes/claim")
		}
	})
	b.Run("migrate", func(b *testing.B) {
		for range b.N {
			cl := redistest.StartCluster(b, 3)
			rdb := cl.Client(b)
			cfg := Config{Prefix: redistest.Prefix(b)}
			c, err := NewClient(rdb, cfg)
			if err != nil {
				b.Fatal(err)
			}
			fillClaims(b, c, "claims")
			k := keys.For(cfg.Prefix, "claims", 0)
			slot := cl.Slot(b, k.T)
			from := cl.MasterOf(b, slot)
			var to *redistest.Server
			for _, s := range cl.All() { // three masters, no replica
				if s.Addr != from.Addr {
					to = s
					break
				}
			}
			inSlot, err := from.Client(b).ClusterCountKeysInSlot(context.Background(), slot).Result()
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			cl.MigrateSlot(b, slot, from, to, 100, 0)
			took := time.Since(start)
			b.ReportMetric(took.Seconds(), "s/migration")
			b.ReportMetric(float64(inSlot), "keys")
			b.ReportMetric(float64(claimTasks)/float64(inSlot), "claims-share")
		}
	})
}

// fillClaims enqueues claimTasks tasks with TaskIDs to queue q, 1,000 a
// call: each claims its ID for Config.IDTTL.
func fillClaims(b *testing.B, c *Client, q string) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < claimTasks; i += 1000 {
		tasks := make([]*Task, 1000)
		for j := range tasks {
			tasks[j] = NewRawTask("t", []byte("x"), TaskID(fmt.Sprintf("order-%08d", i+j)))
		}
		if _, err := c.EnqueueMany(ctx, tasks, In(q)); err != nil {
			b.Fatal(err)
		}
	}
}

// deleteMatching deletes the keys matching pattern and returns how many.
func deleteMatching(tb testing.TB, rdb redis.UniversalClient, pattern string) int {
	tb.Helper()
	ctx := context.Background()
	n := 0
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			n += int(rdb.Del(ctx, batch...).Val())
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		n += int(rdb.Del(ctx, batch...).Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatal(err)
	}
	return n
}
