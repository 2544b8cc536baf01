package queue

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// TestEnqueueRetriesTryAgain: while a partition's slot is half migrated
// (some of its keys moved), Redis refuses the enqueue script with
// TRYAGAIN, having run nothing. Enqueue sends it again with a growing wait
// and succeeds once the migration ends, 1.5 s later, enqueueing the task
// once.
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
	finish := halfMigrate(t, cl, k.T, k.Feed())

	done := make(chan error, 1)
	go func() {
		_, err := client.Enqueue(ctx, NewRawTask("t", nil))
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond) // the tries meet TRYAGAIN for a while
	finish()
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

// halfMigrate opens the migration of tag's slot to another master and
// moves the keys given (none: every key stays, so a script declaring keys
// the source lacks is sent on with ASK). finish moves the rest and gives
// the slot to the target on every master.
func halfMigrate(t *testing.T, cl *redistest.Cluster, tag string, first ...string) (finish func()) {
	t.Helper()
	ctx := context.Background()
	slot := cl.Slot(t, tag)
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
		if len(keys) == 0 {
			return
		}
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", 0, 5000, "KEYS"}
		for _, key := range keys {
			args = append(args, key)
		}
		must(t, src.Do(ctx, args...).Err())
	}
	migrate(first...)
	return func() {
		rest, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
		must(t, err)
		migrate(rest...)
		for _, c := range []*redis.Client{dst, src, cl.Nodes[0].Client(t), cl.Nodes[1].Client(t), cl.Nodes[2].Client(t)} {
			must(t, c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
		}
	}
}

// TestWaitReplicasDuringMigration: rcall.RunReplicated, which sends the
// script and WAIT to a node client (no go-redis redirects there), follows
// the migration of a fresh partition's slot by itself: ASK to the target,
// TRYAGAIN there while the keys are split, then MOVED once it ends. The
// task is enqueued once (no replica confirms it: the cluster has none).
func TestWaitReplicasDuringMigration(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	cfg := Config{Prefix: redistest.Prefix(t), WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	finish := halfMigrate(t, cl, keys.For(cfg.Prefix, "fresh", 0).T)
	done := make(chan error, 1)
	go func() {
		info, err := client.Enqueue(ctx, NewRawTask("t", nil), In("fresh"))
		if info == nil && err == nil {
			err = errors.New("no info")
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	finish()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotReplicated) {
			t.Fatalf("Enqueue during the migration: %v, want it enqueued (ErrNotReplicated: no replicas here)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enqueue did not return within 10s")
	}
	qi, err := insp.QueueInfo(ctx, "fresh")
	must(t, err)
	if qi.Pending != 1 {
		t.Errorf("pending = %d, want 1", qi.Pending)
	}
}
