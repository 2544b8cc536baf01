package dashboard

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/shardq/shardq/internal/node"
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

// readNode reads what the node page and its API show (node.Read), and
// the node as the workflow's graph shows it.
func (d *server) readNode(r *http.Request) (*nodeData, error) {
	name, err := nodeName(r)
	if err != nil {
		return nil, err
	}
	n, err := node.Read(r.Context(), d.insp, r.PathValue("id"), name)
	if err != nil {
		return nil, err
	}
	v := newWorkflowView(n.Workflow, newDAG(n.Workflow.Nodes))
	data := &nodeData{WorkflowID: n.Workflow.ID, WorkflowState: string(n.Workflow.State), Task: n.Task, TaskGone: n.TaskGone}
	for _, nv := range v.Nodes {
		if nv.Name == name {
			data.Node = nv
		}
	}
	for _, c := range n.Children {
		data.Children = append(data.Children, childEdge{Child: c.Name, OnDead: string(c.OnDead)})
	}
	switch {
	case n.ResultErr != nil:
		data.ResultError = n.ResultErr.Error()
	case n.Result != nil:
		data.HasResult = true
		if utf8.Valid(n.Result) {
			data.Result = string(n.Result)
		} else {
			data.Result, data.ResultBinary = base64.StdEncoding.EncodeToString(n.Result), true
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
