package redisproc_test

import (
	"context"
	"fmt"
	"path/filepath"
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

func TestStartClusterNeedsThreeNodes(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(2)
	want := "redisproc: StartCluster needs at least 3 nodes, got 2"
	if c != nil || err == nil || err.Error() != want {
		t.Fatalf("StartCluster(2) = %v, %v; want error %q", c, err, want)
	}
}
