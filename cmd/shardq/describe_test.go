package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestDescribe shows each kind with --output json, and as text.
func TestDescribe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	t.Run("Queue", func(t *testing.T) {
		t.Parallel()
		var q queueDescription
		f.jsonOut(t, &q, "describe", "queue", "email")
		if q.Name != "email" || q.Pending != 3 || q.Groups != 1 {
			t.Fatalf("got %+v", q)
		}
	})
	t.Run("Task", func(t *testing.T) {
		t.Parallel()
		var ti taskJSON
		f.jsonOut(t, &ti, "describe", "task", "p-3", "--queue", "email")
		payload, _ := ti.Payload.(map[string]any)
		if ti.ID != "p-3" || ti.Type != "report" || ti.State != "pending" || payload["day"] != "monday" ||
			ti.PayloadEncoding != "json" || ti.Headers["trace"] != "t1" {
			t.Fatalf("got %+v", ti)
		}
		f.jsonOut(t, &ti, "describe", "task", "d-1", "--queue", "work")
		if ti.State != "dead" || ti.LastError != "boom: timeout" || ti.Attempts != 1 {
			t.Fatalf("dead task: %+v", ti)
		}
		code, out, errOut := run(t, f.env, "describe", "task", "p-3", "--queue", "email")
		if code != exitOK || !strings.Contains(out, `{"day":"monday"}`) || !strings.Contains(out, "Header trace:  t1") {
			t.Fatalf("text: exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("Group", func(t *testing.T) {
		t.Parallel()
		var g groupJSON
		f.jsonOut(t, &g, "describe", "group", "acme", "--queue", "email")
		if g.Group != "acme" || g.Waiting != 2 || g.Paused {
			t.Fatalf("got %+v", g)
		}
	})
	t.Run("Workflow", func(t *testing.T) {
		t.Parallel()
		var w workflowDescription
		f.jsonOut(t, &w, "describe", "workflow", f.wf)
		if w.ID != f.wf || len(w.Nodes) != 2 || w.Nodes[0].Name != "1" || w.Nodes[1].Parents[0].Parent != "1" ||
			w.Nodes[0].State != "enqueued" || w.Nodes[1].State != "waiting" {
			t.Fatalf("got %+v", w)
		}
		code, out, _ := run(t, f.env, "describe", "workflow", f.wf)
		if code != exitOK || !strings.Contains(out, "NODE") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		fits(t, "describe workflow", out)
	})
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := run(t, f.env, "describe", "task", "p-1", "--queue", "emial")
		if code != exitFailure || !strings.Contains(errOut, `no queue "emial" under prefix "shardq"; its queues are: chain, email, work`) {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestDescribeBadInput(t *testing.T) {
	t.Parallel()
	runBadInput(t, "describe", []badInput{
		{"NoName", nil, []string{"task"}, exitUsage, "want a kind and a name"},
		{"UnknownKind", nil, []string{"pod", "x"}, exitUsage, `unknown kind "pod"`},
		{"NoQueue", nil, []string{"task", "x"}, exitUsage, "--queue is required"},
		{"QueueOfWorkflow", nil, []string{"workflow", "x", "--queue", "q"}, exitUsage, "--queue does not apply"},
		{"NodeWithoutWorkflow", nil, []string{"node", "x"}, exitUsage, "--workflow is required"},
		{"WorkflowOfTask", nil, []string{"task", "x", "--queue", "q", "--workflow", "w"}, exitUsage, "--workflow does not apply"},
		{"Help", nil, []string{"-h"}, exitOK, "Kinds:"},
	})
}

// TestDescribeBatch: a batch shows as a workflow of kind batch, with its
// members' counts apart from its gate.
func TestDescribeBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	id, err := f.client.NewBatch(ctx, queue.BatchOptions{Description: "nightly import"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.AddToBatch(ctx, id, queue.NewRawTask("import", nil, queue.In("chain")),
		queue.NewRawTask("import", nil, queue.In("chain"))); err != nil {
		t.Fatal(err)
	}
	if err := f.client.CloseBatch(ctx, id); err != nil {
		t.Fatal(err)
	}
	var w workflowDescription
	f.jsonOut(t, &w, "describe", "workflow", id)
	if w.Kind != "batch" || w.Batch == nil || w.Batch.Members != 2 || w.Batch.Pending != 2 || !w.Batch.Closed {
		t.Fatalf("got %+v, batch %+v", w, w.Batch)
	}
	code, out, _ := run(t, f.env, "describe", "workflow", id)
	if code != exitOK || !strings.Contains(out, "2 members: 2 pending, 0 succeeded, 0 dead; closed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestDescribeNode: a workflow fetch → store → report, where fetch
// succeeded with a result and no retention (its task is gone), store runs
// and report waits. describe node shows each as the dashboard's node page
// does: fetch's result and a task no longer kept; store's task, kept while
// it runs; report waiting on its parent. An unknown node is not found.
func TestDescribeNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	w := queue.NewWorkflow()
	w.Add("fetch", queue.NewRawTask("fetch", nil, queue.In("nodes")))
	w.Add("store", queue.NewRawTask("store", nil, queue.In("nodes")), queue.After("fetch"))
	w.Add("report", queue.NewRawTask("report", nil, queue.In("nodes")), queue.After("store"))
	id, err := f.client.EnqueueWorkflow(ctx, w)
	must(t, err)
	release := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("fetch", func(ctx context.Context, task *worker.Task) error {
		return task.SetResult(ctx, []byte(`{"rows":42}`))
	})
	mux.HandleFunc("store", func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	cfg := worker.Config{Queues: map[string]int{"nodes": 1}, Concurrency: 2}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(f.srv.Client(t), cfg, mux)
	must(t, err)
	must(t, srv.Start(ctx))
	t.Cleanup(func() {
		close(release)
		_ = srv.Shutdown(context.Background())
	})
	var store nodeDescription
	waitUntil(t, 30*time.Second, "store to run", func() bool {
		f.jsonOut(t, &store, "describe", "node", "store", "--workflow", id)
		return store.Task != nil && store.Task.State == "active"
	})
	if store.Node.State != "enqueued" || store.Node.Parents[0].Parent != "fetch" || len(store.Children) != 1 ||
		store.Children[0].Child != "report" || store.Result != nil || store.WorkflowState != "active" {
		t.Fatalf("store: %+v", store)
	}

	var fetch nodeDescription
	f.jsonOut(t, &fetch, "describe", "node", "fetch", "--workflow", id)
	if fetch.Node.State != "succeeded" || fetch.Result == nil || *fetch.Result != `{"rows":42}` || !fetch.TaskGone || fetch.Task != nil {
		t.Fatalf("fetch: %+v", fetch)
	}
	code, out, errOut := run(t, f.env, "describe", "node", "fetch", "--workflow", id)
	if code != exitOK || !strings.Contains(out, `{"rows":42}`) || !strings.Contains(out, "(gone: retention passed)") || !strings.Contains(out, "store (if this dies: fail)") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	fits(t, "describe node", out)

	var report nodeDescription
	f.jsonOut(t, &report, "describe", "node", "report", "--workflow", id)
	if report.Node.State != "waiting" || report.Task != nil || report.TaskGone || len(report.Children) != 0 {
		t.Fatalf("report: %+v", report)
	}
	code, _, errOut = run(t, f.env, "describe", "node", "nope", "--workflow", id)
	if code != exitFailure || !strings.Contains(errOut, `has no node "nope"`) {
		t.Fatalf("unknown node: exit %d, stderr %q", code, errOut)
	}
}
