package dashboard_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// flowEnv is a Redis with one finished batch (3 members succeeded, 2
// dead, both callbacks) and one chain (queue.Chain) failed at its dead
// middle link, made by a real worker, and the dashboard over it.
type flowEnv struct {
	*env
	batch, chain string
	links        []string
	// recovered makes the "die" handler succeed: an operator fixed the cause
	recovered atomic.Bool
}

func setupFlows(t *testing.T) *flowEnv {
	t.Helper()
	e := &flowEnv{env: newEnv(t)}
	mux := worker.NewMux()
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("die", func(context.Context, *worker.Task) error {
		if e.recovered.Load() {
			return nil
		}
		return worker.SkipRetry(errors.New(`card declined <b>twice</b>`))
	})
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg,
		Queues: map[string]int{"emails": 1, "billing": 1}, Concurrency: 8, WorkflowSweep: 100 * time.Millisecond}, mux)
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	b, err := e.client.NewBatch(e.ctx, queue.BatchOptions{
		Description: `nightly <script>alert(1)</script> mailing`,
		OnSuccess:   queue.NewRawTask("ok", nil, queue.In("emails")),
		OnComplete:  queue.NewRawTask("ok", nil, queue.In("emails")),
	})
	must(t, err)
	_, err = e.client.AddToBatch(e.ctx, b, queue.NewRawTask("ok", nil, queue.In("emails")), queue.NewRawTask("ok", nil, queue.In("emails")),
		queue.NewRawTask("ok", nil, queue.In("emails")), queue.NewRawTask("die", nil, queue.In("emails")),
		queue.NewRawTask("die", nil, queue.In("emails")))
	must(t, err)
	must(t, e.client.CloseBatch(e.ctx, b))
	e.batch = b
	e.chain, err = e.client.EnqueueWorkflow(e.ctx, queue.Chain(queue.NewRawTask("ok", nil, queue.In("billing")),
		queue.NewRawTask("die", nil, queue.In("billing")), queue.NewRawTask("ok", nil, queue.In("emails"))))
	must(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		bi, err1 := e.insp.GetWorkflow(e.ctx, e.batch)
		ci, err2 := e.insp.GetWorkflow(e.ctx, e.chain)
		if err1 == nil && err2 == nil && bi.State == queue.StateFailed && ci.State == queue.StateFailed {
			for _, n := range ci.Nodes {
				e.links = append(e.links, n.TaskID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch and the chain did not settle: %+v %v / %+v %v", bi, err1, ci, err2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.serve(dashboard.Options{Unauthenticated: true})
	return e
}

// TestFlowPagesAndAPI: the flows list, the batch page and a chain's
// workflow page and their JSON, as an operator reads them; a task's page names its
// flow; unknown IDs are 404s; text from users is escaped; the list costs a
// bounded number of Redis calls.
func TestFlowPagesAndAPI(t *testing.T) {
	t.Parallel()
	e := setupFlows(t)

	var list struct {
		Workflows []struct {
			Kind  string
			ID    string
			Batch *struct {
				Total, Succeeded, Dead, Pending, Percent int
				Finished                                 bool
			}
			Workflow *struct {
				State  string
				Counts map[string]int
			}
		}
	}
	e.calls.roundTrips.Store(0)
	r := e.get("/api/workflows")
	r.json(t, &list)
	if r.code != 200 || len(list.Workflows) != 2 {
		t.Fatalf("/api/workflows: %d %s", r.code, r.body)
	}
	if n := e.calls.roundTrips.Load(); n > 4 {
		t.Fatalf("/api/workflows cost %d Redis calls for 2 flows, want one pipeline for the list and one read each", n)
	}
	for _, f := range list.Workflows {
		switch f.Kind {
		case "batch":
			if f.ID != e.batch || f.Batch == nil || f.Batch.Total != 5 || f.Batch.Succeeded != 3 || f.Batch.Dead != 2 ||
				f.Batch.Pending != 0 || f.Batch.Percent != 100 || !f.Batch.Finished {
				t.Fatalf("batch in the list: %+v %+v", f, f.Batch)
			}
		case "workflow":
			if f.ID != e.chain || f.Workflow == nil || f.Workflow.State != "failed" || f.Workflow.Counts["dead"] != 1 ||
				f.Workflow.Counts["failed"] != 1 || f.Workflow.Counts["succeeded"] != 1 {
				t.Fatalf("chain in the list: %+v %+v", f, f.Workflow)
			}
		default:
			t.Fatalf("flow kind %q", f.Kind)
		}
	}

	var batch struct {
		Description      string
		State            string
		OnSuccess        string `json:"on_success"`
		OnComplete       string `json:"on_complete"`
		CompleteState    string `json:"complete_state"`
		SuccessState     string `json:"success_state"`
		Closed, Finished bool
	}
	r = e.get("/api/batches/" + e.batch)
	r.json(t, &batch)
	// OnComplete went out and ran; OnSuccess never went out: two
	// members are dead
	if r.code != 200 || !batch.Closed || !batch.Finished || batch.CompleteState != "succeeded" || batch.SuccessState != "failed" ||
		batch.State != "failed" || batch.OnSuccess == "" || batch.OnComplete == "" || !strings.Contains(batch.Description, "<script>") {
		t.Fatalf("/api/batches: %d %s", r.code, r.body)
	}

	var chain struct {
		State string
		Why   string
		Nodes []struct {
			Name                      string
			TaskID                    string `json:"task_id"`
			Queue, Type, State, Error string
		}
	}
	r = e.get("/api/workflows/" + e.chain)
	r.json(t, &chain)
	if r.code != 200 || len(chain.Nodes) != 3 || chain.Nodes[1].Name != "2" || chain.Nodes[1].State != "dead" || chain.Nodes[2].State != "failed" ||
		chain.Nodes[0].TaskID != e.links[0] || chain.Nodes[1].Queue != "billing" || !strings.Contains(chain.Why, "declined") {
		t.Fatalf("/api/workflows of a chain: %d %s", r.code, r.body)
	}

	// the pages
	page := e.get("/workflows")
	if page.code != 200 || !strings.Contains(page.body, "/dash/batches/"+e.batch) || !strings.Contains(page.body, "/dash/workflows/"+e.chain) {
		t.Fatalf("/workflows: %d %s", page.code, page.body)
	}
	page = e.get("/batches/" + e.batch)
	if page.code != 200 || !strings.Contains(page.body, `data-count="dead">2<`) || !strings.Contains(page.body, `data-count="succeeded">3<`) ||
		!strings.Contains(page.body, `data-callback="success">failed<`) || !strings.Contains(page.body, `data-callback="complete">succeeded<`) {
		t.Fatalf("batch page: %d %s", page.code, page.body)
	}
	if strings.Contains(page.body, "<script>alert(1)") || !strings.Contains(page.body, "&lt;script&gt;alert(1)") {
		t.Fatal("the batch's description is not escaped on its page")
	}
	// a batch is a workflow: its page draws it, with no link for the
	// gate (no task) nor the members (no queue kept once enqueued)
	page = e.get("/workflows/" + e.batch)
	if page.code != 200 || !strings.Contains(page.body, `data-node=".close"`) || !strings.Contains(page.body, `data-node=".on-complete"`) ||
		strings.Contains(page.body, "/tasks/\"") || strings.Contains(page.body, "/queues//tasks/") {
		t.Fatalf("batch's workflow page: %d %s", page.code, page.body)
	}
	page = e.get("/workflows/" + e.chain)
	if page.code != 200 || !strings.Contains(page.body, `id="workflow-why"`) || strings.Contains(page.body, "<b>twice</b>") ||
		!strings.Contains(page.body, "/dash/queues/billing/tasks/"+e.links[1]) {
		t.Fatalf("chain's workflow page: %d %s", page.code, page.body)
	}
	// the dead link's page names its chain and offers the retry that resumes it
	page = e.get("/queues/billing/tasks/" + e.links[1])
	if page.code != 200 || !strings.Contains(page.body, `id="task-node"><code>2</code></a> of`) || !strings.Contains(page.body, "/dash/workflows/"+e.chain) ||
		!strings.Contains(page.body, `data-action="run"`) {
		t.Fatalf("dead link's task page: %d %s", page.code, page.body)
	}
	var task struct {
		Flow struct {
			WorkflowID string `json:"workflow_id"`
			Node       string
		}
	}
	r = e.get("/api/queues/billing/tasks/" + e.links[1])
	r.json(t, &task)
	if task.Flow.WorkflowID != e.chain || task.Flow.Node != "2" {
		t.Fatalf("task JSON's flow: %s", r.body)
	}

	// unknown IDs; a workflow of another shape is no batch
	for _, path := range []string{"/batches/nope", "/workflows/nope", "/api/batches/nope", "/api/workflows/nope",
		"/batches/" + e.chain, "/api/batches/" + e.chain} {
		if r := e.get(path); r.code != 404 {
			t.Fatalf("%s: %d, want 404", path, r.code)
		}
	}
}

// TestBrowserFlows: an operator in Chromium opens the flows page, follows
// the failed chain to its dead link, retries it there, and watches the
// chain resume and finish; the batch page shows its progress.
func TestBrowserFlows(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupFlows(t)
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"

	b.navigate(base + "/workflows")
	b.waitFor("the flows table", `document.querySelectorAll("table.flows tr.flow").length === 2`)
	b.screenshot("flows")
	b.click(`a[href$="/batches/` + e.batch + `"]`)
	b.waitFor("the batch page", `document.querySelector('#batch-counts [data-count="dead"]')`)
	if got := b.eval(`document.querySelector('#batch-counts [data-count="succeeded"]').textContent`); got != "3" {
		t.Fatalf("batch page: %v succeeded, want 3", got)
	}
	if got := b.eval(`document.querySelector("#batch-progress progress").value`); got != float64(100) {
		t.Fatalf("batch progress %v, want 100", got)
	}
	b.screenshot("batch")

	b.navigate(base + "/workflows/" + e.chain)
	b.waitFor("the failed chain", `document.getElementById("workflow-why")`)
	b.screenshot("chain-stopped")
	b.click(`#workflow-problems tr.node.dead td.id a`)
	b.waitFor("the dead link's page", `document.querySelector('button[data-action="run"]')`)
	e.recovered.Store(true) // the operator fixed the card problem
	b.click(`button[data-action="run"]`)
	b.waitFor("the page after the retry", `location.search.includes("done=run")`)
	b.navigate(base + "/workflows/" + e.chain)
	deadline := time.Now().Add(30 * time.Second)
	for b.eval(`document.getElementById("workflow-state").textContent`) != "succeeded" {
		if time.Now().After(deadline) {
			t.Fatalf("the chain did not finish after the retry: %v", b.eval(`document.body.innerText`))
		}
		time.Sleep(100 * time.Millisecond)
		b.navigate(base + "/workflows/" + e.chain)
	}
	if n := b.eval(`document.querySelectorAll("#workflow-graph g.node.succeeded").length`); n != float64(3) {
		t.Fatalf("%v links succeeded, want 3", n)
	}
	b.screenshot("chain-succeeded")
}
