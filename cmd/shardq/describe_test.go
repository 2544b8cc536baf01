package main

import (
	"context"
	"strings"
	"testing"

	"github.com/shardq/shardq/queue"
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
