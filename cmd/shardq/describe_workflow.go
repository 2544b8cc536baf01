package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// workflowDescription is a workflow with its nodes.
type workflowDescription struct {
	workflowJSON
	// Batch is set for a batch: its members' counts.
	Batch *batchJSON `json:"batch,omitempty"`
	Nodes []nodeJSON `json:"nodes"`
}

// nodeJSON is a workflow's node.
type nodeJSON struct {
	Name    string     `json:"name"`
	TaskID  string     `json:"task_id,omitempty"`
	Queue   string     `json:"queue,omitempty"`
	Type    string     `json:"type,omitempty"`
	State   string     `json:"state"`
	Parents []edgeJSON `json:"parents,omitempty"`
	Error   string     `json:"error,omitempty"`
}

func newNodeJSON(n queue.WorkflowNode) nodeJSON {
	v := nodeJSON{Name: n.Name, TaskID: n.TaskID, Queue: n.Queue, Type: n.Type, State: string(n.State), Error: n.Error}
	for _, e := range n.Parents {
		v.Parents = append(v.Parents, edgeJSON{Parent: e.Parent, OnDead: string(e.OnDead)})
	}
	return v
}

// edgeJSON is an edge from a parent, with what the node does when the
// parent does not succeed: fail, run or skip.
type edgeJSON struct {
	Parent string `json:"parent"`
	OnDead string `json:"on_dead"`
}

// describeWorkflow shows a workflow and its nodes: a chain's links, a
// batch's members, gate and callbacks among them.
func describeWorkflow(ctx context.Context, m *Main, s *session, _, id string, asJSON bool) error {
	w, err := s.insp.GetWorkflow(ctx, id)
	if err != nil {
		return s.explain(ctx, err, "")
	}
	kind, batch := "workflow", newBatchJSON(w)
	if batch != nil { // a batch is a workflow with a gate, as the dashboard tells them
		kind = "batch"
	}
	d := workflowDescription{workflowJSON: newWorkflowJSON(kind, w), Batch: batch, Nodes: make([]nodeJSON, 0, len(w.Nodes))}
	for _, n := range w.Nodes {
		d.Nodes = append(d.Nodes, newNodeJSON(n))
	}
	if asJSON {
		return writeJSON(m.Stdout, d)
	}
	var f fields
	f.add("ID", w.ID)
	f.add("State", string(w.State))
	f.opt("Why", w.Why)
	f.opt("Description", w.Description)
	f.opt("Parent batch", w.Parent)
	f.add("Nodes", fmt.Sprintf("%d (%d finished), %d edges", w.Total, d.finishedNodes(), w.Edges))
	if batch != nil {
		f.add("Batch", batch.line())
	}
	now := time.Now()
	f.add("Created", ago(w.CreatedAt, now))
	if !w.FinishedAt.IsZero() {
		f.add("Finished", ago(w.FinishedAt, now))
	}
	f.write(m.Stdout)
	fmt.Fprintln(m.Stdout)
	t := newTable(column{head: "NODE", cut: true}, column{head: "STATE"}, column{head: "TYPE", cut: true},
		column{head: "PARENTS", cut: true, optional: true}, column{head: "TASK"})
	for _, n := range d.Nodes {
		parents := make([]string, len(n.Parents))
		for i, e := range n.Parents {
			parents[i] = e.Parent
		}
		t.add(n.Name, n.State, dash(n.Type), dash(strings.Join(parents, ",")), dash(n.TaskID))
	}
	t.write(m.Stdout)
	return nil
}
