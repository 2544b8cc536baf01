package dashboard

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/node"
	"github.com/shardq/shardq/queue"
)

// nodeStates are the states of a workflow node, in the order the pages
// list them.
var nodeStates = []queue.State{queue.StateWaiting, queue.StateEnqueued, queue.StateSucceeded, queue.StateDead,
	queue.StateFailed, queue.StateSkipped, queue.StateCancelled}

// maxProblems bounds the dead and failed nodes a workflow page lists.
const maxProblems = 200

// workflowSummary is a workflow in the flows list: its state and how many
// nodes are in each state, without the nodes.
type workflowSummary struct {
	ID     string         `json:"id"`
	State  string         `json:"state"`
	Why    string         `json:"why,omitempty"`
	Total  int            `json:"total"` // nodes
	Edges  int            `json:"edges"`
	Counts map[string]int `json:"counts"`
	// Percent is the share of nodes finished: neither waiting nor enqueued.
	Percent    int        `json:"percent"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

func newWorkflowSummary(w *queue.WorkflowInfo) *workflowSummary {
	v := &workflowSummary{ID: w.ID, State: string(w.State), Why: w.Why, Total: w.Total, Edges: w.Edges,
		Counts: map[string]int{}, CreatedAt: w.CreatedAt, FinishedAt: timePtr(w.FinishedAt)}
	for _, s := range nodeStates {
		v.Counts[string(s)] = w.Counts[s]
	}
	if v.Total > 0 {
		v.Percent = (v.Total - v.Counts[string(queue.StateWaiting)] - v.Counts[string(queue.StateEnqueued)]) * 100 / v.Total
	}
	return v
}

// stateCount is how many nodes are in a state.
type stateCount struct {
	State string
	N     int
}

// Breakdown returns the states that hold nodes, with their counts, in
// the order of nodeStates.
func (v *workflowSummary) Breakdown() []stateCount {
	var out []stateCount
	for _, s := range nodeStates {
		if n := v.Counts[string(s)]; n > 0 {
			out = append(out, stateCount{string(s), n})
		}
	}
	return out
}

// workflowView is a workflow as the API returns it: the summary and
// every node.
type workflowView struct {
	workflowSummary
	Nodes []nodeView `json:"nodes"`
}

// nodeView is one node of a workflow. Layer is its longest path from a
// root, the column the graph draws it in.
type nodeView struct {
	Name    string     `json:"name"`
	TaskID  string     `json:"task_id"`
	Queue   string     `json:"queue"`
	Type    string     `json:"type"`
	State   string     `json:"state"`
	Layer   int        `json:"layer"`
	Parents []edgeView `json:"parents"`
	Error   string     `json:"error,omitempty"`
	// Linked says the node's task was enqueued, so it has a page.
	Linked bool `json:"-"`
}

// edgeView is an edge from a node's parent, with what the node does when
// the parent does not succeed (fail, run or skip).
type edgeView struct {
	Parent string `json:"parent"`
	OnDead string `json:"on_dead"`
}

func newWorkflowView(w *queue.WorkflowInfo, d *dag) *workflowView {
	v := &workflowView{workflowSummary: *newWorkflowSummary(w), Nodes: make([]nodeView, 0, len(w.Nodes))}
	for i, n := range w.Nodes {
		nv := nodeView{Name: n.Name, TaskID: n.TaskID, Queue: n.Queue, Type: n.Type, State: string(n.State),
			Layer: d.layer[i], Parents: []edgeView{}, Error: n.Error, Linked: node.HasTask(n)}
		for _, e := range n.Parents {
			nv.Parents = append(nv.Parents, edgeView{Parent: e.Parent, OnDead: string(cmp.Or(e.OnDead, queue.EdgeFail))})
		}
		v.Nodes = append(v.Nodes, nv)
	}
	return v
}

// layerRow is one layer in the summary of a workflow too big to draw.
type layerRow struct {
	Layer  int
	Nodes  int
	Counts map[string]int
}

// workflowData is what the workflow page shows: the graph when the
// workflow is small enough to draw, else a row per layer; and its dead
// and failed nodes, dead first.
type workflowData struct {
	*workflowView
	Graph        *graph
	Layers       []layerRow
	Problems     []nodeView
	MoreProblems int
	// Active says the workflow can be cancelled.
	Active bool
}

func newWorkflowData(w *queue.WorkflowInfo) workflowData {
	d := newDAG(w.Nodes)
	v := newWorkflowView(w, d)
	data := workflowData{workflowView: v, Active: w.State == queue.StateActive}
	if len(w.Nodes) <= maxDrawnNodes && d.edges <= maxDrawnEdges {
		data.Graph = newGraph(w.Nodes, d)
	} else {
		data.Layers = make([]layerRow, d.depth)
		for l := range data.Layers {
			data.Layers[l] = layerRow{Layer: l, Counts: map[string]int{}}
		}
		for _, n := range v.Nodes {
			data.Layers[n.Layer].Nodes++
			data.Layers[n.Layer].Counts[n.State]++
		}
	}
	for _, n := range v.Nodes {
		if n.State == string(queue.StateDead) || n.State == string(queue.StateFailed) {
			data.Problems = append(data.Problems, n)
		}
	}
	slices.SortStableFunc(data.Problems, func(a, b nodeView) int {
		return boolRank(a.State == string(queue.StateDead)) - boolRank(b.State == string(queue.StateDead))
	})
	if len(data.Problems) > maxProblems {
		data.Problems, data.MoreProblems = data.Problems[:maxProblems], len(data.Problems)-maxProblems
	}
	return data
}

// boolRank sorts true first.
func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

func (d *server) workflowPage(w http.ResponseWriter, r *http.Request) {
	wi, err := d.insp.GetWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "workflow", "Workflow "+wi.ID, newWorkflowData(wi))
}

func (d *server) apiWorkflow(w http.ResponseWriter, r *http.Request) {
	wi, err := d.insp.GetWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWorkflowView(wi, newDAG(wi.Nodes)))
}
