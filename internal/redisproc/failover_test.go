package redisproc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// TestClusterWithReplicasFailover: three masters with a replica each; a
// master killed with SIGKILL is replaced by its replica, which keeps the
// data it had replicated.
func TestClusterWithReplicasFailover(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartClusterWithReplicas(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Replicas) != 3 || len(c.Addrs()) != 6 {
		t.Fatalf("%d replicas, %d addrs; want 3 and 6", len(c.Replicas), len(c.Addrs()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	if err := rdb.Set(ctx, "{a}k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.ClusterKeySlot(ctx, "{a}k").Result()
	if err != nil {
		t.Fatal(err)
	}
	slot := int(n)
	m, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.ReplicaOf(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	mc := redis.NewClient(&redis.Options{Addr: m.Addr})
	defer mc.Close()
	if err := mc.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	now, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if now != r {
		t.Fatalf("slot %d is served by %s, want the promoted replica %s", slot, now.Addr, r.Addr)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	v, err := rc.Get(ctx, "{a}k").Result()
	if err != nil || v != "v" {
		t.Fatalf("GET on the promoted replica = %q, %v", v, err)
	}
}

// TestSentinelFailover: a master, a replica and three Sentinels; the
// master killed, the Sentinels promote the replica.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	st, err := redisproc.StartSentinel()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := st.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m != st.Data[0] {
		t.Fatalf("master is %s, want %s", m.Addr, st.Data[0].Addr)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err = st.Master(ctx)
		if err == nil && m == st.Data[1] {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no failover: master %v, %v", m, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMigrateSlot: a slot's keys move to another master and every node
// names that master for it.
func TestMigrateSlot(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	for i := range 25 {
		if err := rdb.Set(ctx, fmt.Sprintf("{m}%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot := int(rdb.ClusterKeySlot(ctx, "{m}").Val())
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := c.Nodes[0]
	if to == from {
		to = c.Nodes[1]
	}
	if err := c.MigrateSlot(ctx, slot, from, to, 10, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if now, err := c.MasterOf(ctx, slot); err != nil || now != to {
		t.Fatalf("slot %d served by %v (%v), want %s", slot, now, err, to.Addr)
	}
	tc := redis.NewClient(&redis.Options{Addr: to.Addr})
	defer tc.Close()
	if n := tc.ClusterCountKeysInSlot(ctx, slot).Val(); n != 25 {
		t.Fatalf("%s holds %d keys of slot %d, want 25", to.Addr, n, slot)
	}
	for i := range 25 {
		if v, err := rdb.Get(ctx, fmt.Sprintf("{m}%d", i)).Int(); err != nil || v != i {
			t.Fatalf("GET {m}%d = %d, %v", i, v, err)
		}
	}
}
