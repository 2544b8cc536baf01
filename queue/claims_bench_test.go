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
// deleting the hashes of 100,000 claims, so the tasks' own bytes cancel
// out), and how long moving a slot full of claims to another master takes
// ("migrate": one partition's 100,000 tasks and their claims on a
// 3-master cluster, moved by MIGRATE in batches of 100 keys; "keys" is
// how many keys the slot held). Run it alone, with -benchtime 1x.
func BenchmarkClaims(b *testing.B) {
	// 100,000 claims in one bucket keep each shard's hash a listpack;
	// 1,000,000 pass the 512 fields of Redis's default
	// hash-max-listpack-entries, and the hashes become hash tables
	for _, n := range []int{claimTasks, 10 * claimTasks} {
		b.Run(fmt.Sprintf("memory/claims=%d", n), func(b *testing.B) {
			for range b.N {
				bn := setupTB(b, Config{})
				fillClaimsN(b, bn.client, "claims", n)
				before := usedMemoryTB(b, bn.rdb)
				k := keys.For(bn.cfg.Prefix, "claims", 0)
				deleted := deleteMatching(b, bn.rdb, k.IDClaims())
				if deleted == 0 || deleted > 2*1024 {
					b.Fatalf("deleted %d claim keys, want 1 to 2,048 (a bucket's shards, two if it turned)", deleted)
				}
				after := usedMemoryTB(b, bn.rdb)
				b.ReportMetric(float64(before-after)/float64(n), "bytes/claim")
				b.ReportMetric(float64(deleted), "claim-keys")
			}
		})
	}
	// Redis CPU per task of EnqueueMany by 1,000, with and without a
	// TaskID: what checking and taking a claim adds
	for _, claimed := range []bool{false, true} {
		b.Run(fmt.Sprintf("enqueue/claimed=%v", claimed), func(b *testing.B) {
			for range b.N {
				bn := setupTB(b, Config{})
				fillClaimsN(b, bn.client, "warm", 1000)
				start := redisCPU(b, bn.rdb)
				ctx := context.Background()
				for i := 0; i < claimTasks; i += 1000 {
					tasks := make([]*Task, 1000)
					for j := range tasks {
						var opts []Option
						if claimed {
							opts = append(opts, TaskID(fmt.Sprintf("order-%08d", i+j)))
						}
						tasks[j] = NewRawTask("t", []byte("x"), opts...)
					}
					if _, err := bn.client.EnqueueMany(ctx, tasks, In("claims")); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((redisCPU(b, bn.rdb)-start).Microseconds())/claimTasks, "redis-µs/task")
			}
		})
	}
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
		}
	})
}

// fillClaims enqueues claimTasks tasks with TaskIDs to queue q, 1,000 a
// call: each claims its ID for Config.IDTTL.
func fillClaims(b *testing.B, c *Client, q string) { fillClaimsN(b, c, q, claimTasks) }

// fillClaimsN is fillClaims of n tasks, a multiple of 1,000.
func fillClaimsN(b *testing.B, c *Client, q string, n int) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
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
