package dashboard

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/shardq/shardq/queue"
)

// nodeData is a workflow node's page. The workflow's home keeps a node's
// state, error and result for the workflow's retention, while its task is
// kept only for the task's own Retention, often none: so the page reads
// the node from the home and shows the task only when it is still there.
type nodeData struct {
	WorkflowID    string
	WorkflowState string
	Node          nodeView
	Children      []childEdge
	// Result is the node's result as text, base64 when ResultBinary;
	// ResultError says why it could not be read (a key the ring lacks).
	Result       string
	HasResult    bool
	ResultBinary bool
	ResultError  string
	// Task is the node's task while Redis keeps it; TaskGone says it was
	// enqueued but is gone: it finished and its Retention passed.
	Task     *queue.TaskInfo
	TaskGone bool
}

// childEdge is an edge to a node's child, with what the child does when
// the node does not succeed (fail, run or skip).
type childEdge struct {
	Child  string `json:"child"`
	OnDead string `json:"on_dead"`
}

// nodeName reads the node's name from the query: a name may hold any
// character, a slash or "..", which a path step could not carry.
func nodeName(r *http.Request) (string, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return "", fmt.Errorf("%w: name the node: ?name=<node>", errBadRequest)
	}
	return name, nil
}

// nodePath is a node's page, relative to the base.
func nodePath(workflow, node string) string {
	return "/workflows/" + url.PathEscape(workflow) + "/node?name=" + url.QueryEscape(node)
}

// readNode reads what the node page and its API show: the workflow's
// nodes (for the node and its edges), the node's result, and its task.
func (d *server) readNode(r *http.Request) (*nodeData, error) {
	name, err := nodeName(r)
	if err != nil {
		return nil, err
	}
	wi, err := d.insp.GetWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	v := newWorkflowView(wi, newDAG(wi.Nodes))
	data := &nodeData{WorkflowID: wi.ID, WorkflowState: string(wi.State)}
	found := false
	for _, n := range v.Nodes {
		if n.Name == name {
			data.Node, found = n, true
		}
		for _, e := range n.Parents {
			if e.Parent == name {
				data.Children = append(data.Children, childEdge{Child: n.Name, OnDead: e.OnDead})
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("workflow %s has no node %q: %w", wi.ID, name, queue.ErrNotFound)
	}
	if data.Node.State == string(queue.StateSucceeded) {
		res, err := d.insp.NodeResult(r.Context(), wi.ID, name)
		switch {
		case err != nil:
			data.ResultError = err.Error()
		case res != nil:
			data.HasResult = true
			if utf8.Valid(res) {
				data.Result = string(res)
			} else {
				data.Result, data.ResultBinary = base64.StdEncoding.EncodeToString(res), true
			}
		}
	}
	if data.Node.Linked {
		ti, err := d.insp.GetTask(r.Context(), data.Node.Queue, data.Node.TaskID)
		switch {
		case err == nil:
			data.Task = ti
		case errors.Is(err, queue.ErrNotFound):
			data.TaskGone = true
		default:
			return nil, err
		}
	}
	return data, nil
}

func (d *server) nodePage(w http.ResponseWriter, r *http.Request) {
	data, err := d.readNode(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "node", "Node "+data.Node.Name, data)
}

// nodeAPIView is a node as the API returns it: the node, its children,
// its result, and its task while Redis keeps it.
type nodeAPIView struct {
	WorkflowID    string      `json:"workflow_id"`
	WorkflowState string      `json:"workflow_state"`
	Node          nodeView    `json:"node"`
	Children      []childEdge `json:"children"`
	Result        *string     `json:"result,omitempty"`
	ResultBase64  string      `json:"result_base64,omitempty"`
	ResultError   string      `json:"result_error,omitempty"`
	Task          *taskView   `json:"task,omitempty"`
	TaskGone      bool        `json:"task_gone,omitempty"`
}

func (d *server) apiNode(w http.ResponseWriter, r *http.Request) {
	data, err := d.readNode(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := nodeAPIView{WorkflowID: data.WorkflowID, WorkflowState: data.WorkflowState, Node: data.Node,
		Children: append([]childEdge{}, data.Children...), ResultError: data.ResultError, TaskGone: data.TaskGone}
	if data.HasResult {
		if data.ResultBinary {
			out.ResultBase64 = data.Result
		} else {
			out.Result = &data.Result
		}
	}
	if data.Task != nil {
		tv := newTaskView(data.Task)
		out.Task = &tv
	}
	writeJSON(w, http.StatusOK, out)
}
