package redistest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", got)
	}
	rdb := c.Client(t)
	ctx := context.Background()
	prefix := redistest.Prefix(t)

	for i := range 100 {
		if err := rdb.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), i, 0).Err(); err != nil {
			t.Fatalf("SET %d: %v", i, err)
		}
	}
	for i := range 100 {
		got, err := rdb.Get(ctx, fmt.Sprintf("%s:%d", prefix, i)).Int()
		if err != nil || got != i {
			t.Fatalf("GET %d = %d, %v", i, got, err)
		}
	}
	// The keys really are spread over the nodes.
	for _, node := range c.Nodes {
		n, err := node.Client(t).DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Errorf("node %s holds %d keys (%v), want some", node.Addr, n, err)
		}
	}

	key := "{" + prefix + "}:counter"
	script := `redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[1])`
	got, err := rdb.Eval(ctx, script, []string{key}, 41).Int()
	if err != nil || got != 42 {
		t.Fatalf("EVAL = %d, %v; want 42", got, err)
	}
}

func TestClusterNeedsThreeNodes(t *testing.T) {
	t.Parallel()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.StartCluster(f, 2)
	}()
	<-done
	if want := "redistest: StartCluster needs at least 3 nodes, got 2"; f.msg != want {
		t.Fatalf("StartCluster(2) failed with %q, want %q", f.msg, want)
	}
}
