// Package graphshape builds the workflows the benchmarks measure, so that
// worker's BenchmarkWorkflow and bench/instructions run the same graphs.
package graphshape

import (
	"fmt"
	"strconv"

	"github.com/shardq/shardq/queue"
)

// Shapes names the shapes Build knows.
var Shapes = []string{"fan-out", "layers"}

// Width is the number of nodes per layer of the "layers" shape.
const Width = 100

// Build returns a workflow of n nodes, each a "noop" task with payload:
// "fan-out" is a root in queue root with n-1 children in queue graph;
// "layers" is layers of Width nodes in queue graph, each node a child of
// two nodes of the layer above. Another shape is an error.
func Build(shape string, n int, payload []byte) (*queue.Workflow, error) {
	wf := queue.NewWorkflow()
	switch shape {
	case "fan-out":
		wf.Add("root", queue.NewRawTask("noop", payload, queue.In("root")))
		for i := 1; i < n; i++ {
			wf.Add("n"+strconv.Itoa(i), queue.NewRawTask("noop", payload, queue.In("graph")), queue.After("root"))
		}
	case "layers":
		for l := range n / Width {
			for i := range Width {
				var parents []queue.Edge
				if l > 0 {
					parents = []queue.Edge{queue.After(node(l-1, i)), queue.After(node(l-1, (i+1)%Width))}
				}
				wf.Add(node(l, i), queue.NewRawTask("noop", payload, queue.In("graph")), parents...)
			}
		}
	default:
		return nil, fmt.Errorf("graphshape: unknown shape %q, want one of %v", shape, Shapes)
	}
	return wf, nil
}

// node names the i-th node of layer l.
func node(l, i int) string { return fmt.Sprintf("%d-%d", l, i) }
