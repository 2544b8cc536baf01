// Package graphshape builds the workflows the benchmarks measure, so that
// worker's BenchmarkWorkflow and bench/instructions run the same graphs.
package graphshape

import (
	"fmt"
	"strconv"

	"github.com/shardq/shardq/queue"
)

// Shapes names the shapes Build knows.
var Shapes = []string{"fan-out", "fan-in", "layers"}

// Width is the number of nodes per layer of the "layers" shape.
const Width = 100

// Build returns a workflow of n nodes, each a "noop" task with payload:
// "fan-out" is a root in queue root with n-1 children in queue graph;
// "fan-in" is a root in queue root with n-2 children in queue graph, all
// parents of one last node, in queue graph too; "layers" is layers of
// Width nodes in queue graph, each node a child of two nodes of the layer
// above. Another shape is an error.
func Build(shape string, n int, payload []byte) (*queue.Workflow, error) {
	wf := queue.NewWorkflow()
	switch shape {
	case "fan-out":
		wf.Add("root", queue.NewRawTask("noop", payload, queue.In("root")))
		for i := 1; i < n; i++ {
			wf.Add("n"+strconv.Itoa(i), queue.NewRawTask("noop", payload, queue.In("graph")), queue.After("root"))
		}
	case "fan-in":
		wf.Add("root", queue.NewRawTask("noop", payload, queue.In("root")))
		join := make([]queue.Edge, 0, n-2)
		for i := 1; i < n-1; i++ {
			wf.Add("n"+strconv.Itoa(i), queue.NewRawTask("noop", payload, queue.In("graph")), queue.After("root"))
			join = append(join, queue.After("n"+strconv.Itoa(i)))
		}
		wf.Add("join", queue.NewRawTask("noop", payload, queue.In("graph")), join...)
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

// Released is how many nodes of a graph of shape and n nodes the success
// of its root releases: the benchmarks run the root alone first. Layers
// have no single root: 0.
func Released(shape string, n int) int {
	switch shape {
	case "fan-out":
		return n - 1
	case "fan-in":
		return n - 2
	}
	return 0
}

// node names the i-th node of layer l.
func node(l, i int) string { return fmt.Sprintf("%d-%d", l, i) }
