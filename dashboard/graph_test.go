package dashboard

import (
	"slices"
	"testing"

	"github.com/shardq/shardq/queue"
)

// TestGraphLayout: layers are longest paths from a root, and a sweep
// puts children next to their parents.
func TestGraphLayout(t *testing.T) {
	node := func(name string, parents ...string) queue.WorkflowNode {
		n := queue.WorkflowNode{Name: name, State: queue.StateWaiting}
		for _, p := range parents {
			n.Parents = append(n.Parents, queue.After(p))
		}
		return n
	}
	for _, tc := range []struct {
		name   string
		nodes  []queue.WorkflowNode
		layers []int
		rows   [][]string
	}{
		{"Diamond", []queue.WorkflowNode{node("a"), node("b", "a"), node("c", "a"), node("d", "b", "c")},
			[]int{0, 1, 1, 2}, [][]string{{"a"}, {"b", "c"}, {"d"}}},
		{"LongestPath", []queue.WorkflowNode{node("end", "a", "c"), node("a"), node("b", "a"), node("c", "b")},
			[]int{3, 0, 1, 2}, [][]string{{"a"}, {"b"}, {"c"}, {"end"}}},
		// added crossed: the sweep uncrosses them
		{"Uncrossed", []queue.WorkflowNode{node("r0"), node("r1"), node("c1", "r1"), node("c0", "r0")},
			[]int{0, 0, 1, 1}, [][]string{{"r0", "r1"}, {"c0", "c1"}}},
		{"UnknownParentIgnored", []queue.WorkflowNode{node("a", "gone")}, []int{0}, [][]string{{"a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDAG(tc.nodes)
			if !slices.Equal(d.layer, tc.layers) {
				t.Fatalf("layers %v, want %v", d.layer, tc.layers)
			}
			var rows [][]string
			for _, row := range d.rows() {
				var names []string
				for _, i := range row {
					names = append(names, tc.nodes[i].Name)
				}
				rows = append(rows, names)
			}
			if !slices.EqualFunc(rows, tc.rows, slices.Equal) {
				t.Fatalf("rows %q, want %q", rows, tc.rows)
			}
			g := newGraph(tc.nodes, d)
			if len(g.Nodes) != len(tc.nodes) || g.W < nodeW || g.H < nodeH {
				t.Fatalf("graph %+v", g)
			}
		})
	}
}
