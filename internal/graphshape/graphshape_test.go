package graphshape

import (
	"context"
	"strings"
	"testing"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/queuetest"
	"github.com/shardq/shardq/worker"
)

// TestBuild: each shape runs to its end with every node once, in the
// order its edges allow (a layers node after its two parents), and an
// unknown shape is an error that names it.
func TestBuild(t *testing.T) {
	t.Parallel()
	const n = 300
	for _, shape := range Shapes {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			wf, err := Build(shape, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			env := queuetest.New(t)
			ctx := context.Background()
			id, err := env.Client.EnqueueWorkflow(ctx, wf)
			if err != nil {
				t.Fatal(err)
			}
			res := env.Drain(t, worker.HandlerFunc(func(context.Context, *worker.Task) error { return nil }), "root", "graph")
			if res.Succeeded != n || res.Runs != n {
				t.Fatalf("%d runs, %d done, want %d each", res.Runs, res.Succeeded, n)
			}
			wi, err := env.Inspector.GetWorkflow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			edges := n - 1
			switch shape {
			case "fan-in":
				edges = 2 * (n - 2)
			case "layers":
				edges = 2 * (n - Width)
			}
			if wi.State != queue.StateSucceeded || wi.Total != n || wi.Edges != edges {
				t.Fatalf("workflow %s: %d nodes, %d edges, want succeeded, %d, %d", wi.State, wi.Total, wi.Edges, n, edges)
			}
		})
	}
	if _, err := Build("ring", 10, nil); err == nil || !strings.Contains(err.Error(), `"ring"`) {
		t.Fatalf("unknown shape: %v, want an error naming it", err)
	}
}
