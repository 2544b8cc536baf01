package redisproc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

func TestStartCluster(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	c, err := redisproc.StartCluster(3, redisproc.WithDir(base))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", got)
	}
	for i, s := range c.Nodes {
		if want := filepath.Join(base, fmt.Sprintf("node%d", i)); s.Dir != want {
			t.Errorf("node %d: Dir = %q, want %q", i, s.Dir, want)
		}
		if !exists(filepath.Join(s.Dir, "nodes.conf")) {
			t.Errorf("node %d: no nodes.conf in %s", i, s.Dir)
		}
	}

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	ctx := context.Background()
	for i := range 100 {
		if err := rdb.Set(ctx, fmt.Sprintf("k:%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET %d: %v", i, err)
		}
	}
	// The keys really are spread over the nodes.
	for _, s := range c.Nodes {
		n, err := client(t, s).DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Errorf("node %s holds %d keys (%v), want some", s.Addr, n, err)
		}
	}

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, s := range c.Nodes {
		if s.Running() {
			t.Errorf("node %d still running after Close", i)
		}
		if !exists(s.Dir) {
			t.Errorf("Close removed node %d's directory %s given with WithDir", i, s.Dir)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStartClusterTempDirs(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, s := range c.Nodes {
		if exists(s.Dir) {
			t.Errorf("Close left node %d's temporary directory %s", i, s.Dir)
		}
	}
}

// TestStartClusterOneMaster: one node owns all 16384 slots and serves
// keys of every slot through a cluster client, the baseline of bench
// --cluster.
func TestStartClusterOneMaster(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Addrs(); len(got) != 1 || got[0] != c.Nodes[0].Addr {
		t.Fatalf("Addrs() = %q, want the one node %s", got, c.Nodes[0].Addr)
	}
	ctx := context.Background()
	node := client(t, c.Nodes[0])
	info, err := node.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER INFO: %v", err)
	}
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:1\r\n", "cluster_size:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	// keys whose slots lie at both ends of the range
	for i := range 100 {
		if err := rdb.Set(ctx, fmt.Sprintf("k:%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET %d: %v", i, err)
		}
	}
	if n, err := node.DBSize(ctx).Result(); err != nil || n != 100 {
		t.Errorf("the node holds %d keys (%v), want all 100", n, err)
	}
	// The lone node, never having met a peer, still reports its address,
	// so clients name it as it was started.
	var masters []string
	err = rdb.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		masters = append(masters, m.Options().Addr)
		return nil
	})
	if err != nil || len(masters) != 1 || masters[0] != c.Nodes[0].Addr {
		t.Errorf("ForEachMaster visited %q (%v), want only %s", masters, err, c.Nodes[0].Addr)
	}
	if m, err := rdb.MasterForKey(ctx, "k:1"); err != nil || m.Options().Addr != c.Nodes[0].Addr {
		t.Errorf("MasterForKey: %v (%v), want %s", m, err, c.Nodes[0].Addr)
	}
}

func TestStartClusterNeedsANode(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(0)
	want := "redisproc: StartCluster needs at least 1 node, got 0"
	if c != nil || err == nil || err.Error() != want {
		t.Fatalf("StartCluster(0) = %v, %v; want error %q", c, err, want)
	}
}

// TestStartClusterWithReplicasNeedsThreeMasters: with fewer, a dead
// master's replica could never be elected.
func TestStartClusterWithReplicasNeedsThreeMasters(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartClusterWithReplicas(2)
	want := "redisproc: StartClusterWithReplicas needs at least 3 masters, got 2"
	if c != nil || err == nil || err.Error() != want {
		t.Fatalf("StartClusterWithReplicas(2) = %v, %v; want error %q", c, err, want)
	}
}
