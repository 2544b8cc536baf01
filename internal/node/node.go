// Package node reads one workflow node as the dashboard's node page and
// `shardq describe node` show it: the workflow's record keeps a node's
// state, edges and result for the workflow's retention, while its task is
// kept only for the task's own Retention, often none, so the task is read
// when it is still there and reported gone otherwise.
package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardq/shardq/queue"
)

// Node is a workflow's node with what its page shows.
type Node struct {
	Workflow *queue.WorkflowInfo
	Node     queue.WorkflowNode
	// Children are the edges to the node's children, in the workflow's
	// order of nodes.
	Children []Child
	// Result is the node's result once it succeeded (nil: none);
	// ResultErr says why it could not be read (a key the ring lacks).
	Result    []byte
	ResultErr error
	// Task is the node's task while Redis keeps it; TaskGone says it was
	// enqueued but is gone: it finished and its Retention passed.
	Task     *queue.TaskInfo
	TaskGone bool
}

// Child is an edge to a node's child, with what the child does when the
// node does not succeed.
type Child struct {
	Name   string
	OnDead queue.EdgePolicy
}

// Read reads node name of workflow id: the workflow (for the node and its
// edges), the node's result when it succeeded, and its task when it has
// one. A name the workflow lacks is queue.ErrNotFound.
func Read(ctx context.Context, insp *queue.Inspector, id, name string) (*Node, error) {
	w, err := insp.GetWorkflow(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &Node{Workflow: w}
	found := false
	for _, n := range w.Nodes {
		if n.Name == name {
			out.Node, found = n, true
		}
		for _, e := range n.Parents {
			if e.Parent == name {
				out.Children = append(out.Children, Child{Name: n.Name, OnDead: e.OnDead})
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("workflow %s has no node %q: %w", w.ID, name, queue.ErrNotFound)
	}
	if out.Node.State == queue.StateSucceeded {
		out.Result, out.ResultErr = insp.NodeResult(ctx, w.ID, name)
	}
	if HasTask(out.Node) {
		ti, err := insp.GetTask(ctx, out.Node.Queue, out.Node.TaskID)
		switch {
		case err == nil:
			out.Task = ti
		case errors.Is(err, queue.ErrNotFound):
			out.TaskGone = true
		default:
			return nil, err
		}
	}
	return out, nil
}

// HasTask reports whether n's task was enqueued, so it may be read: a
// waiting node's task does not exist yet, and a failed, skipped or
// cancelled node's never will. A batch's gate has no task, and its
// members keep no queue.
func HasTask(n queue.WorkflowNode) bool {
	s := n.State
	return n.TaskID != "" && n.Queue != "" && (s == queue.StateEnqueued || s == queue.StateSucceeded || s == queue.StateDead)
}
