package queue

import (
	"context"
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// TestBatchIsWorkflow: a batch is a workflow of its shape, and
// GetWorkflow reads it: a taskless gate, enqueued until Close makes it
// succeed; members that are roots, enqueued at Add under the task IDs
// Add returned, with no route kept; callbacks waiting for every member and
// the gate (OnComplete over EdgeRun, OnSuccess over EdgeFail), with no
// edge stored. A dead member fails OnSuccess, which still takes members,
// and the member's retry to success makes it wait again. Extensions
// follow the gate: from outside, refused once it closed. A caller's node
// name may not start with the batch's dot.
func TestBatchIsWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	batch, err := b.client.NewBatch(ctx, BatchOptions{Description: "shape",
		OnSuccess: NewRawTask("ok", nil, In("cb")), OnComplete: NewRawTask("all", nil, In("cb"))})
	must(t, err)
	infos, err := b.client.AddToBatch(ctx, batch, NewRawTask("m", []byte("1"), In("q")), NewRawTask("m", []byte("2"), In("q")))
	must(t, err)
	// a node added from outside, as ExtendWorkflow does, is a member too
	more := NewWorkflow()
	more.Add("extra", NewRawTask("m", []byte("3"), In("q")))
	must(t, b.client.ExtendWorkflow(ctx, batch, more))

	wi, err := b.insp.GetWorkflow(ctx, batch)
	must(t, err)
	if wi.State != StateActive || wi.Total != 6 || wi.Counts[StateEnqueued] != 4 || wi.Counts[StateWaiting] != 2 {
		t.Fatalf("batch as a workflow: %s, %d nodes, counts %v; want active, 6 nodes, 4 enqueued, 2 waiting", wi.State, wi.Total, wi.Counts)
	}
	if g := wi.Node(home.Gate); g == nil || g.State != StateEnqueued || g.TaskID != "" {
		t.Fatalf("gate: %+v, want enqueued, taskless", g)
	}
	for _, in := range infos {
		found := false
		for _, n := range wi.Nodes {
			found = found || (n.TaskID == in.ID && n.State == StateEnqueued && home.IsBatchNode(n.Name))
		}
		if !found {
			t.Fatalf("member task %s is no enqueued node of %+v", in.ID, wi.Nodes)
		}
	}
	W := keys.Home(b.cfg.Prefix, keys.HomeOf(batch)).Workflow(batch)
	for _, in := range infos {
		name := ""
		for _, n := range wi.Nodes {
			if n.TaskID == in.ID {
				name = n.Name
			}
		}
		if b.rdb.HExists(ctx, W, "m:"+name).Val() {
			t.Fatalf("member %s keeps its route once enqueued", name)
		}
	}
	for cb, policy := range map[string]EdgePolicy{home.OnSuccess: EdgeFail, home.OnComplete: EdgeRun} {
		n := wi.Node(cb)
		if n == nil || n.State != StateWaiting || len(n.Parents) != 4 {
			t.Fatalf("callback %s: %+v, want waiting for the gate and 3 members", cb, n)
		}
		for _, p := range n.Parents {
			if p.OnDead != policy {
				t.Fatalf("callback %s: parent %s over %s, want %s", cb, p.Parent, p.OnDead, policy)
			}
		}
	}
	if b.rdb.HExists(ctx, W, "c:"+home.Gate).Val() {
		t.Fatal("the gate stores its edges to the callbacks")
	}

	// a dead member fails OnSuccess, which still takes new members, and
	// the member's retry to success makes it wait again
	h := keys.Home(b.cfg.Prefix, keys.HomeOf(batch))
	note := func(taskID, outcome string) {
		for _, n := range wi.Nodes {
			if n.TaskID == taskID {
				ref := wire.FlowRef{Kind: 'w', Home: keys.HomeOf(batch), ID: keys.ShortID(batch), Node: n.Name}.String()
				v, err := msgpack.Marshal([]any{ref, wire.StoredID(taskID), outcome, "", "boom"})
				must(t, err)
				must(t, script.HomeNotify.Run(ctx, b.rdb, []string{h.Out()}, h.H, "", string(v)).Err())
				return
			}
		}
		t.Fatalf("no node has task %s", taskID)
	}
	note(infos[0].ID, "d")
	_, err = b.client.AddToBatch(ctx, batch, NewRawTask("m", []byte("4"), In("q")))
	must(t, err)
	wi, err = b.insp.GetWorkflow(ctx, batch)
	must(t, err)
	if n := wi.Node(home.OnSuccess); n.State != StateFailed || len(n.Parents) != 5 {
		t.Fatalf("OnSuccess after a death and an add: %s with %d parents, want failed with 5", n.State, len(n.Parents))
	}
	if n := wi.Node(home.OnComplete); n.State != StateWaiting {
		t.Fatalf("OnComplete after a death: %s, want waiting", n.State)
	}
	note(infos[0].ID, "s")
	wi, err = b.insp.GetWorkflow(ctx, batch)
	must(t, err)
	if n := wi.Node(home.OnSuccess); n.State != StateWaiting {
		t.Fatalf("OnSuccess after the dead member's retry succeeded: %s, want waiting", n.State)
	}

	must(t, b.client.CloseBatch(ctx, batch))
	must(t, b.client.CloseBatch(ctx, batch)) // twice: harmless
	wi, err = b.insp.GetWorkflow(ctx, batch)
	must(t, err)
	if g := wi.Node(home.Gate); g.State != StateSucceeded {
		t.Fatalf("gate after Close: %s, want succeeded", g.State)
	}
	late := NewWorkflow()
	late.Add("late", NewRawTask("m", nil, In("q")))
	if err := b.client.ExtendWorkflow(ctx, batch, late); !errors.Is(err, ErrFinished) {
		t.Fatalf("extension from outside after Close: %v, want ErrFinished", err)
	}
	if _, err := b.client.AddToBatch(ctx, batch, NewRawTask("m", nil, In("q"))); !errors.Is(err, ErrFinished) {
		t.Fatalf("Add from outside after Close: %v, want ErrFinished", err)
	}
	// 4 members (3 enqueued, 1 succeeded), the gate (succeeded: closed)
	// and 2 callbacks (waiting: not finished); the summary has the gate
	// and the callbacks too
	wi, err = b.insp.GetWorkflow(ctx, batch)
	must(t, err)
	sum, err := b.insp.WorkflowSummary(ctx, batch)
	must(t, err)
	for _, w := range []*WorkflowInfo{wi, sum} {
		if w.State != StateActive || w.Total != 7 || w.Counts[StateEnqueued] != 3 || w.Counts[StateSucceeded] != 2 ||
			w.Counts[StateWaiting] != 2 || w.Description != "shape" || w.Parent != "" || !w.FinishedAt.IsZero() {
			t.Fatalf("batch after Close: %+v", w)
		}
	}
	// the callbacks' edges are not stored: GetWorkflow counts them
	if sum.Edges != 0 || wi.Edges != 2*5 {
		t.Fatalf("edges: summary %d, GetWorkflow %d; want 0 and 10", sum.Edges, wi.Edges)
	}
	if len(sum.Nodes) != 3 || sum.Nodes[0].Name != home.Gate || sum.Node(home.Gate).State != StateSucceeded ||
		sum.Node(home.OnSuccess).TaskID != wi.Node(home.OnSuccess).TaskID || sum.Node(home.OnSuccess).TaskID == "" ||
		sum.Node(home.OnComplete).State != StateWaiting || sum.Node(home.OnComplete).Queue != "cb" || sum.Node(home.OnComplete).Type != "all" {
		t.Fatalf("summary's nodes: %+v", sum.Nodes)
	}

	w := NewWorkflow()
	w.Add(".x", NewRawTask("m", nil))
	if _, err := b.client.EnqueueWorkflow(ctx, w); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a node named with a dot: %v, want ErrInvalid", err)
	}
	if err := b.client.CloseBatch(ctx, newFlowID("")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Close of an unknown batch: %v, want ErrNotFound", err)
	}
	plain := NewWorkflow()
	plain.Add("a", NewRawTask("a", nil))
	id, err := b.client.EnqueueWorkflow(ctx, plain)
	must(t, err)
	if err := b.client.CloseBatch(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Close of a workflow that is no batch: %v, want ErrNotFound", err)
	}
}

// TestWorkflowCorruptNodeTask: a node whose task record (m:) does not
// decode is read one way by both reads, which report it as they did
// apart: WorkflowSummary shows a batch's own node without its task, and
// GetWorkflow leaves the node out.
func TestWorkflowCorruptNodeTask(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	batch, err := b.client.NewBatch(ctx, BatchOptions{OnSuccess: NewRawTask("ok", nil, In("cb"))})
	if err != nil {
		t.Fatal(err)
	}
	key := keys.Home(b.cfg.Prefix, keys.HomeOf(batch)).Workflow(batch)
	if err := b.rdb.HSet(ctx, key, "m:"+home.OnSuccess, "\xc1").Err(); err != nil {
		t.Fatal(err)
	}
	sum, err := b.insp.WorkflowSummary(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.Node(home.OnSuccess); n == nil || n.State != StateWaiting || n.TaskID != "" || n.Type != "" {
		t.Fatalf("WorkflowSummary's %s = %+v, want it waiting, without its task", home.OnSuccess, n)
	}
	w, err := b.insp.GetWorkflow(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if n := w.Node(home.OnSuccess); n != nil || w.Node(home.Gate) == nil {
		t.Fatalf("GetWorkflow's nodes %+v: want the gate, and no %s", w.Nodes, home.OnSuccess)
	}
}
