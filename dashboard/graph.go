package dashboard

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/shardq/shardq/queue"
)

// The workflow graph's geometry, in SVG user units. The SVG is drawn at
// its own size and scrolls: a big graph is never shrunk out of reach.
const (
	nodeW, nodeH = 176, 38
	colGap       = 64 // between layers, where the edges run
	rowGap       = 14
	graphMargin  = 12
	// sweeps is how many times the layers are ordered by their parents,
	// with an ordering by children between two.
	sweeps = 3
)

// A workflow of more than maxDrawnNodes nodes or maxDrawnEdges edges gets
// a summary per layer instead of a drawing.
const (
	maxDrawnNodes = 200
	maxDrawnEdges = 2000
)

// dag is a workflow's nodes by index, with their parents, children and
// layers.
type dag struct {
	parents, children [][]int
	// policy is the policy of each edge in parents.
	policy [][]queue.EdgePolicy
	// layer is a node's longest path from a root; depth counts layers.
	layer []int
	depth int
	edges int
}

func newDAG(nodes []queue.WorkflowNode) *dag {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n.Name] = i
	}
	d := &dag{parents: make([][]int, len(nodes)), children: make([][]int, len(nodes)),
		policy: make([][]queue.EdgePolicy, len(nodes)), layer: make([]int, len(nodes))}
	indeg := make([]int, len(nodes))
	for i, n := range nodes {
		for _, e := range n.Parents {
			p, ok := idx[e.Parent]
			if !ok || p == i {
				continue
			}
			d.parents[i] = append(d.parents[i], p)
			d.policy[i] = append(d.policy[i], cmp.Or(e.OnDead, queue.EdgeFail))
			d.children[p] = append(d.children[p], i)
			indeg[i]++
			d.edges++
		}
	}
	// Kahn's algorithm: a node's layer is final once all its parents' are
	var ready []int
	for i, n := range indeg {
		if n == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		for _, c := range d.children[i] {
			d.layer[c] = max(d.layer[c], d.layer[i]+1)
			if indeg[c]--; indeg[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	for _, l := range d.layer {
		d.depth = max(d.depth, l+1)
	}
	return d
}

// rows orders each layer's nodes. They start in the order they were
// added; then each sweep sorts a layer by the mean position of the
// nodes' parents (down) or children (up). Every layer is drawn from the
// top, so a position is a row whatever the layer.
func (d *dag) rows() [][]int {
	rows := make([][]int, d.depth)
	for i, l := range d.layer {
		rows[l] = append(rows[l], i)
	}
	pos := make([]float64, len(d.layer))
	bary := make([]float64, len(d.layer))
	place := func(row []int) {
		for k, i := range row {
			pos[i] = float64(k)
		}
	}
	sort := func(row []int, by [][]int) {
		for _, i := range row {
			bary[i] = pos[i]
			if len(by[i]) > 0 {
				sum := 0.0
				for _, j := range by[i] {
					sum += pos[j]
				}
				bary[i] = sum / float64(len(by[i]))
			}
		}
		slices.SortStableFunc(row, func(a, b int) int { return cmp.Compare(bary[a], bary[b]) })
		place(row)
	}
	for _, row := range rows {
		place(row)
	}
	for s := range sweeps {
		if s > 0 {
			for l := len(rows) - 2; l >= 0; l-- {
				sort(rows[l], d.children)
			}
		}
		for l := 1; l < len(rows); l++ {
			sort(rows[l], d.parents)
		}
	}
	return rows
}

// graph is a workflow laid out for the "graph" template: a column per
// layer, left to right, and an edge from a parent's right side to its
// child's left side.
type graph struct {
	W, H         int
	NodeW, NodeH int
	Nodes        []graphNode
	Edges        []graphEdge
}

// graphNode is a node's box. Label and Type are cut to fit it; Title
// holds them whole, with the node's error.
type graphNode struct {
	X, Y int
	// TextX, NameY and TypeY place its two lines of text.
	TextX, NameY, TypeY int
	Name, Label         string
	Type, Queue         string
	TaskID, State       string
	Title               string
}

// graphEdge is an edge as an SVG path, with its policy (fail, run, skip).
type graphEdge struct {
	Path          string
	Policy        string
	Parent, Child string
}

// newGraph lays out nodes, whose dag is d.
func newGraph(nodes []queue.WorkflowNode, d *dag) *graph {
	rows := d.rows()
	tallest := 1
	for _, row := range rows {
		tallest = max(tallest, len(row))
	}
	pitch := nodeH + rowGap
	g := &graph{NodeW: nodeW, NodeH: nodeH, W: 2*graphMargin + max(d.depth, 1)*(nodeW+colGap) - colGap, H: 2*graphMargin + tallest*pitch - rowGap}
	x, y := make([]int, len(nodes)), make([]int, len(nodes))
	for l, row := range rows {
		for k, i := range row {
			x[i], y[i] = graphMargin+l*(nodeW+colGap), graphMargin+k*pitch
		}
	}
	for c, ps := range d.parents {
		for k, p := range ps {
			g.Edges = append(g.Edges, graphEdge{Policy: string(d.policy[c][k]), Parent: nodes[p].Name, Child: nodes[c].Name,
				Path: edgePath(x[p]+nodeW, y[p]+nodeH/2, x[c], y[c], d.layer[c]-d.layer[p])})
		}
	}
	for i, n := range nodes {
		title := n.Name + "\n" + n.Type + " in " + n.Queue + "\n" + string(n.State)
		if n.Error != "" {
			title += "\n" + cut(n.Error, 400)
		}
		g.Nodes = append(g.Nodes, graphNode{X: x[i], Y: y[i], TextX: x[i] + 8, NameY: y[i] + 16, TypeY: y[i] + 31, Name: n.Name, Label: cut(n.Name, 22), Type: cut(n.Type, 26),
			Queue: n.Queue, TaskID: n.TaskID, State: string(n.State), Title: title})
	}
	return g
}

// edgePath draws an edge from a parent's right side at (x1, y1) to a
// child whose box is at (x2, top), span layers on. An edge to the next
// layer is one curve across the gap between them. A longer one would
// cross the boxes between: it bends into the gap between two rows next
// to the child, which is free in every layer since rows line up, runs
// along it, and bends into the child.
func edgePath(x1, y1, x2, top, span int) string {
	y2, b := top+nodeH/2, colGap/2
	if span <= 1 {
		return fmt.Sprintf("M%d %dC%d %d %d %d %d %d", x1, y1, x1+b, y1, x2-b, y2, x2, y2)
	}
	lane := top - rowGap/2 // above the child, on the parent's side
	if y1 > y2 {
		lane = top + nodeH + rowGap/2
	}
	return fmt.Sprintf("M%d %dC%d %d %d %d %d %dL%d %dC%d %d %d %d %d %d", x1, y1, x1+b, y1, x1+b, lane, x1+colGap, lane,
		x2-colGap, lane, x2-b, lane, x2-b, y2, x2, y2)
}

// cut shortens s to n runes, the last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
