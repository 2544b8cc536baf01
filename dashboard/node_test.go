package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// nodeEnv is a finished workflow of queue "wf" whose tasks keep no
// Retention, as nodes need none: fetch (succeeded, with a result) ->
// report (succeeded, no result), and fetch -> bounce (dead, its task kept
// as dead tasks are), each run by a real worker.
type nodeEnv struct {
	*env
	id string
	wi *queue.WorkflowInfo
}

// fetchResult is what fetch's handler writes, with markup in it.
const fetchResult = `{"rows": 42, "note": "<b>bold</b>"}`

func setupNode(t *testing.T) *nodeEnv {
	t.Helper()
	e := &nodeEnv{env: newEnv(t)}
	mux := worker.NewMux()
	mux.HandleFunc("fetch", func(ctx context.Context, task *worker.Task) error {
		return task.SetResult(ctx, []byte(fetchResult))
	})
	mux.HandleFunc("report", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("bounce", func(context.Context, *worker.Task) error {
		return worker.SkipRetry(errors.New("mailbox full"))
	})
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg,
		Queues: map[string]int{"wf": 1}, Concurrency: 4, WorkflowSweep: 100 * time.Millisecond}, mux)
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	in := queue.In("wf")
	wf := queue.NewWorkflow()
	wf.Add("fetch", queue.NewRawTask("fetch", nil, in))
	wf.Add("report", queue.NewRawTask("report", nil, in), queue.After("fetch"))
	wf.Add("bounce", queue.NewRawTask("bounce", nil, in), queue.After("fetch"))
	e.id, err = e.client.EnqueueWorkflow(e.ctx, wf)
	must(t, err)
	e.wi = e.waitWorkflow(e.id, "every node to finish", func(wi *queue.WorkflowInfo) bool {
		return wi.Counts[queue.StateSucceeded] == 2 && wi.Counts[queue.StateDead] == 1
	})
	e.serve(dashboard.Options{Unauthenticated: true})
	return e
}

// TestWorkflowNodeAPI: a node's JSON holds its state, result and edges,
// and its task while kept; a node whose task is gone says so; a missing or
// unknown node name is a 400 or a 404.
func TestWorkflowNodeAPI(t *testing.T) {
	t.Parallel()
	e := setupNode(t)
	fetch := e.wi.Node("fetch")
	// the gap the node page fills: a succeeded node's task is gone
	if r := e.get("/queues/wf/tasks/" + fetch.TaskID); r.code != http.StatusNotFound {
		t.Fatalf("fetch's task page: %d, want 404 (its task keeps no Retention)", r.code)
	}
	type nodeJSON struct {
		Node struct {
			Name, State, Error string
			TaskID             string `json:"task_id"`
		}
		Children []struct {
			Child  string
			OnDead string `json:"on_dead"`
		}
		Result   *string
		TaskGone bool `json:"task_gone"`
		Task     *struct{ Attempts int }
	}
	var v nodeJSON
	r := e.get("/api/workflows/" + e.id + "/node?name=fetch")
	if r.code != http.StatusOK {
		t.Fatalf("GET node fetch: %d %s", r.code, r.body)
	}
	r.json(t, &v)
	if v.Node.State != "succeeded" || v.Result == nil || *v.Result != fetchResult || !v.TaskGone || v.Task != nil ||
		len(v.Children) != 2 || v.Node.TaskID != fetch.TaskID {
		t.Fatalf("node fetch: %s", r.body)
	}
	v = nodeJSON{}
	r = e.get("/api/workflows/" + e.id + "/node?name=bounce")
	r.json(t, &v)
	if v.Node.State != "dead" || !strings.Contains(v.Node.Error, "mailbox full") || v.TaskGone || v.Task == nil || v.Task.Attempts != 1 || v.Result != nil {
		t.Fatalf("node bounce: %s", r.body)
	}
	if r := e.get("/api/workflows/" + e.id + "/node?name=nope"); r.code != http.StatusNotFound || !strings.Contains(r.body, `no node \"nope\"`) {
		t.Fatalf("unknown node: %d %s", r.code, r.body)
	}
	if r := e.get("/api/workflows/" + e.id + "/node"); r.code != http.StatusBadRequest {
		t.Fatalf("no node name: %d %s", r.code, r.body)
	}
	if r := e.get("/workflows/" + e.id + "/node?name=" + url.QueryEscape("fetch")); r.code != http.StatusOK ||
		strings.Contains(r.body, "<b>bold") || !strings.Contains(r.body, "&lt;b&gt;bold") {
		t.Fatalf("node page: %d, the result not escaped or missing", r.code)
	}
}

// TestBrowserWorkflowNode: in Chromium, an operator clicks a succeeded
// node of a finished workflow, whose task is gone, and reads its state,
// result and why its attempts are not shown; follows an edge to a child;
// and opens a dead node, whose page shows its error and attempts and
// links to its kept task.
func TestBrowserWorkflowNode(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupNode(t)
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"

	b.navigate(base + "/workflows/" + e.id)
	b.waitFor("the graph", `document.getElementById("workflow-graph")`)
	mouseClick(b, `#workflow-graph g.node[data-node="fetch"] rect`)
	b.waitFor("fetch's page", `document.readyState === "complete" && document.getElementById("node-result")`)
	for sel, want := range map[string]string{
		"#node-state":  "succeeded",
		"#node-result": fetchResult,
	} {
		if got := b.eval(`document.querySelector("` + sel + `").textContent`); got != want {
			t.Fatalf("%s shows %q, want %q", sel, got, want)
		}
	}
	if b.eval(`!!document.getElementById("task-gone") && document.getElementById("node-attempts").textContent.includes("not kept")`) != true {
		t.Fatal("the page does not say the task is gone and its attempts not kept")
	}
	if n := b.eval(`document.querySelectorAll("#node-result b").length`); n != float64(0) {
		t.Fatal("the result became markup")
	}
	b.screenshot("workflow-node-succeeded")

	b.click(`#node-children a[href$="name=report"]`)
	b.waitFor("report's page", `document.readyState === "complete" && location.search === "?name=report" && document.getElementById("node-result-none")`)
	b.click(`#node-parents a`)
	b.waitFor("fetch's page again", `document.readyState === "complete" && location.search === "?name=fetch"`)

	b.navigate(base + "/workflows/" + e.id + "/node?name=bounce")
	b.waitFor("bounce's page", `document.getElementById("node-error")`)
	if got := b.eval(`document.getElementById("node-attempts").textContent.trim().split(" ")[0]`); got != "1" {
		t.Fatalf("bounce shows attempts %q, want 1", got)
	}
	b.screenshot("workflow-node-dead")
	b.click(`#node-task a`)
	b.waitFor("bounce's task page", `document.readyState === "complete" && document.getElementById("task-node")`)
	b.click("#task-node")
	b.waitFor("back on bounce's page", `document.readyState === "complete" && location.search === "?name=bounce"`)
	if d := b.dialogsSeen(); len(d) > 0 {
		t.Fatalf("JavaScript dialogs opened: %q", d)
	}
	t.Logf("screenshots in %s", b.shots)
}
