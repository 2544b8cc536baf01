package queue

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// TestEnqueueRetriesTryAgain: while a partition's slot is half migrated
// (some of its keys moved), Redis refuses the enqueue script with
// TRYAGAIN, having run nothing. Enqueue sends it again after a short wait
// and succeeds once the migration ends, enqueueing the task once.
func TestEnqueueRetriesTryAgain(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	cfg := Config{Prefix: redistest.Prefix(t)}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	_, err = client.Enqueue(ctx, NewRawTask("t", nil))
	must(t, err)

	k := keys.For(cfg.Prefix, DefaultQueue, 0)
	slot := cl.Slot(t, k.T)
	from := cl.MasterOf(t, slot)
	to := cl.Nodes[0]
	if to == from {
		to = cl.Nodes[1]
	}
	src, dst := from.Client(t), to.Client(t)
	srcID, dstID := src.ClusterMyID(ctx).Val(), dst.ClusterMyID(ctx).Val()
	must(t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	migrate := func(keys ...string) {
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", 0, 5000, "KEYS"}
		for _, key := range keys {
			args = append(args, key)
		}
		must(t, src.Do(ctx, args...).Err())
	}
	migrate(k.Feed()) // one key gone: a script over the others is refused

	done := make(chan error, 1)
	go func() {
		_, err := client.Enqueue(ctx, NewRawTask("t", nil))
		done <- err
	}()
	time.Sleep(150 * time.Millisecond) // the first tries meet TRYAGAIN
	rest, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
	must(t, err)
	migrate(rest...)
	for _, c := range []*redis.Client{dst, src, cl.Nodes[0].Client(t), cl.Nodes[1].Client(t), cl.Nodes[2].Client(t)} {
		must(t, c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Enqueue during the migration: %v, want it retried until the slot settled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enqueue did not return within 10s")
	}
	qi, err := insp.QueueInfo(ctx, DefaultQueue)
	must(t, err)
	if qi.Pending != 2 {
		t.Errorf("pending = %d, want 2: the refused enqueue ran once", qi.Pending)
	}
}
