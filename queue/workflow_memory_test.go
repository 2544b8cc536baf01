package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/shardq/shardq/internal/keys"
)

// TestWorkflowMemory measures what a waiting node and an edge cost at a
// workflow's home, with MEMORY USAGE of its hash, exact: two graphs of two
// roots and 5,000 children, each child after one root, then after both.
// The difference, without the nodes' tasks, is 5,000 edges. BENCHMARKS.md
// has the figures.
func TestWorkflowMemory(t *testing.T) {
	t.Parallel()
	const n = 5_000
	b := setup(t, Config{})
	ctx := context.Background()
	b.warm(t)
	// usage returns the workflow hash's bytes, then its bytes without the
	// nodes' tasks: a task's length moves with its workflow's ID, and
	// near a size class of the allocator a byte more is a class up for
	// every task, which would drown the edges.
	usage := func(parents ...string) (int64, int64) {
		wf := NewWorkflow()
		wf.Add("r1", NewRawTask("root", make([]byte, 100), In("q")))
		wf.Add("r2", NewRawTask("root", make([]byte, 100), In("q")))
		for i := range n {
			var edges []Edge
			for _, p := range parents {
				edges = append(edges, After(p))
			}
			wf.Add(fmt.Sprintf("n%d", i), NewRawTask("child", make([]byte, 100), In("q")), edges...)
		}
		id, err := b.client.EnqueueWorkflow(ctx, wf)
		must(t, err)
		key := keys.Home(b.cfg.Prefix, keys.HomeOf(id)).Workflow(id)
		all, err := b.rdb.MemoryUsage(ctx, key, 0).Result()
		must(t, err)
		tasks := []string{"e:r1", "e:r2"}
		for i := range n {
			tasks = append(tasks, fmt.Sprintf("e:n%d", i))
		}
		must(t, b.rdb.HDel(ctx, key, tasks...).Err())
		bare, err := b.rdb.MemoryUsage(ctx, key, 0).Result()
		must(t, err)
		return all, bare
	}
	one, oneBare := usage("r1")
	_, twoBare := usage("r1", "r2")
	node, edge := float64(one)/(n+2), float64(twoBare-oneBare)/n
	t.Logf("workflow hash: %.1f bytes per waiting node with one edge, %.1f bytes per edge more (MEMORY USAGE, %d and %d edges)", node, edge, n, 2*n)
	// a node's fields hold its message; an edge is a name in its parent's
	// children list and a count in its child's state
	if edge <= 0 || edge > 32 {
		t.Fatalf("%.1f bytes per edge, want at most 32", edge)
	}
	if node > 600 {
		t.Fatalf("%.1f bytes per waiting node, want at most 600", node)
	}
}
