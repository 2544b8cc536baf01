package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/shardq/shardq/internal/node"
)

// nodeDescription is a workflow's node in full, as the dashboard's node
// API answers: the node, its children, its result, and its task while
// Redis keeps it. A node's task is kept only for its own Retention, often
// none, while the workflow keeps the node's state and result.
type nodeDescription struct {
	WorkflowID    string      `json:"workflow_id"`
	WorkflowState string      `json:"workflow_state"`
	Node          nodeJSON    `json:"node"`
	Children      []childJSON `json:"children"`
	Result        *string     `json:"result,omitempty"`
	ResultBase64  string      `json:"result_base64,omitempty"`
	// ResultError says why the result could not be read: a key the ring
	// lacks (--key-file).
	ResultError string    `json:"result_error,omitempty"`
	Task        *taskJSON `json:"task,omitempty"`
	// TaskGone says the node's task ran but Redis no longer keeps it: it
	// finished and its Retention passed.
	TaskGone bool `json:"task_gone,omitempty"`
}

// childJSON is an edge to a node's child, with what the child does when
// the node does not succeed: fail, run or skip.
type childJSON struct {
	Child  string `json:"child"`
	OnDead string `json:"on_dead"`
}

// describeNode shows node name of workflow id: its state, edges, result
// and task.
func describeNode(ctx context.Context, m *Main, s *session, id, name string, asJSON bool) error {
	d, err := readNode(ctx, s, id, name)
	if err != nil {
		return s.explain(ctx, err, "")
	}
	if asJSON {
		return writeJSON(m.Stdout, d)
	}
	var f fields
	f.add("Node", d.Node.Name)
	f.add("Workflow", d.WorkflowID+" ("+d.WorkflowState+")")
	f.add("State", d.Node.State)
	f.opt("Type", d.Node.Type)
	f.opt("Queue", d.Node.Queue)
	parents := make([]string, len(d.Node.Parents))
	for i, e := range d.Node.Parents {
		parents[i] = e.Parent + " (if it dies: " + e.OnDead + ")"
	}
	f.opt("Parents", strings.Join(parents, ", "))
	children := make([]string, len(d.Children))
	for i, e := range d.Children {
		children[i] = e.Child + " (if this dies: " + e.OnDead + ")"
	}
	f.opt("Children", strings.Join(children, ", "))
	switch {
	case d.Task != nil:
		f.add("Task", d.Task.ID+" ("+d.Task.State+")")
		f.add("Attempts", fmt.Sprintf("%d of %d", d.Task.Attempts, d.Task.MaxRetry+1))
	case d.TaskGone:
		f.add("Task", d.Node.TaskID+" (gone: retention passed)")
	case d.Node.TaskID != "":
		f.add("Task", d.Node.TaskID+" (not enqueued yet)")
	}
	f.opt("Error", d.Node.Error)
	switch {
	case d.Result != nil:
		f.add("Result", *d.Result)
	case d.ResultBase64 != "":
		f.add("Result", d.ResultBase64+" (base64)")
	case d.ResultError != "":
		f.add("Result", "(unreadable: "+d.ResultError+")")
	}
	f.write(m.Stdout)
	return nil
}

// readNode reads node name of workflow id (node.Read) in the node API's
// shape.
func readNode(ctx context.Context, s *session, id, name string) (*nodeDescription, error) {
	n, err := node.Read(ctx, s.insp, id, name)
	if err != nil {
		return nil, err
	}
	d := &nodeDescription{WorkflowID: n.Workflow.ID, WorkflowState: string(n.Workflow.State), Node: newNodeJSON(n.Node),
		Children: []childJSON{}, TaskGone: n.TaskGone}
	for _, c := range n.Children {
		d.Children = append(d.Children, childJSON{Child: c.Name, OnDead: string(c.OnDead)})
	}
	switch {
	case n.ResultErr != nil:
		d.ResultError = n.ResultErr.Error()
	case n.Result == nil:
	case utf8.Valid(n.Result):
		text := string(n.Result)
		d.Result = &text
	default:
		d.ResultBase64 = base64.StdEncoding.EncodeToString(n.Result)
	}
	if n.Task != nil {
		v := newTaskJSON(n.Task, false)
		d.Task = &v
	}
	return d, nil
}
