package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestCluster: on a Redis Cluster of 3 masters, with a queue of 3
// partitions, the doctor scans every master, finds nothing after a normal
// run, finds a stuck lease in each partition, and repairs them so that a
// worker runs each task once.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"default": 3}}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 60 {
		info, err := client.Enqueue(ctx, queue.NewRawTask("t", []byte{byte(i)}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	audit := func(repair bool) *Report {
		t.Helper()
		rep, err := Run(ctx, rdb, Options{Prefix: cfg.Prefix, Repair: repair, Examples: 10})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := audit(false); rep.Violations != 0 || rep.Partitions != 3 {
		t.Fatalf("before: %d partitions, %d violations:%s", rep.Partitions, rep.Violations, describe(rep))
	}
	// a crashed lease at the head of each partition
	for n := range 3 {
		k := keys.For(cfg.Prefix, "default", n)
		first, _ := rdb.Get(ctx, k.First()).Result()
		if first == "" {
			first = "0"
		}
		msg, err := rdb.LPop(ctx, k.ShardPrefix()+first).Result()
		if err != nil {
			t.Fatalf("partition %d: %v", n, err)
		}
		id, _ := wire.HeadID(msg)
		tm, _ := rdb.Time(ctx).Result()
		rdb.HSet(ctx, k.Msg(), id, msg)
		rdb.HSet(ctx, k.State(), id, record(t, "active", 1, 2, "ghost", tm.UnixMilli()-60_000, 0))
		rdb.ZAdd(ctx, k.Active(), redis.Z{Score: float64(tm.UnixMilli() - 1000), Member: id})
	}
	rep := audit(true)
	if got := counts(rep); got["stuck-leases"] != 3 || rep.Violations != 3 || rep.Repaired != 3 {
		t.Fatalf("the leases: %d violations, %d repaired:%s", rep.Violations, rep.Repaired, describe(rep))
	}
	if rep := audit(false); rep.Violations != 0 {
		t.Fatalf("after: %d violations:%s", rep.Violations, describe(rep))
	}
	var runs counter
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg, Concurrency: 4, ShutdownTimeout: 5 * time.Second},
		worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error { runs.count(task.ID); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every task ran", func() bool { return runs.total() >= len(ids) })
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if runs.get(id) != 1 {
			t.Errorf("task %s ran %d times", id, runs.get(id))
		}
	}
	if rep := audit(false); rep.Violations != 0 {
		t.Fatalf("after the run: %d violations:%s", rep.Violations, describe(rep))
	}
}
