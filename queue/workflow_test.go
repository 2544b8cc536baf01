package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
)

// TestWorkflowRefused: every invalid workflow is ErrInvalid with
// a message naming what was wrong, and nothing is written to Redis.
func TestWorkflowRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	task := func(typ string, opts ...Option) *Task { return NewRawTask(typ, nil, opts...) }
	big := NewWorkflow()
	for k := range maxWorkflowNodes + 1 {
		big.Add(fmt.Sprintf("n%d", k), task("x"))
	}
	cases := []struct {
		name  string
		build func(w *Workflow)
		want  string
	}{
		{"empty", func(w *Workflow) {}, "no nodes"},
		{"cycle", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("b", task("b"), After("a"), After("d"))
			w.Add("c", task("c"), After("b"))
			w.Add("d", task("d"), After("c"))
		}, "a cycle runs through node"},
		{"self", func(w *Workflow) { w.Add("a", task("a"), After("a")) }, `node "a" is its own parent`},
		{"unknown parent", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("b", task("b"), After("nope"))
		}, `node "b" names "nope", which is no node`},
		{"twice", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("a", task("a"))
		}, `node "a" added twice`},
		{"parent twice", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("b", task("b"), After("a"), After("a"))
		}, `names "a" twice`},
		{"bad policy", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("b", task("b"), Edge{Parent: "a", OnDead: "maybe"})
		}, `policy "maybe"`},
		{"empty name", func(w *Workflow) { w.Add("", task("a")) }, "empty node name"},
		{"space", func(w *Workflow) { w.Add("a b", task("a")) }, "space or control"},
		{"long name", func(w *Workflow) { w.Add(strings.Repeat("n", maxNodeNameLen+1), task("a")) }, "limit 128"},
		{"nil task", func(w *Workflow) { w.Add("a", nil) }, "has no task"},
		{"task ID", func(w *Workflow) { w.Add("a", task("a", TaskID("mine"))) }, "TaskID"},
		{"unique", func(w *Workflow) { w.Add("a", task("a", Unique(time.Hour))) }, "Unique"},
		{"bad queue", func(w *Workflow) { w.Add("a", task("a", In("no spaces allowed"))) }, "queue"},
		{"before cycle", func(w *Workflow) {
			w.Add("a", task("a"), Before("c"))
			w.Add("b", task("b"), After("a"))
			w.Add("c", task("c"), After("b"), Before("b"))
		}, "a cycle runs through node"},
		{"both ends", func(w *Workflow) {
			w.Add("a", task("a"))
			w.Add("b", task("b"), Edge{Parent: "a", Child: "a"})
		}, "names a parent or a child"},
		{"no end", func(w *Workflow) { w.Add("a", task("a"), Edge{OnDead: EdgeRun}) }, "names a parent or a child"},
		{"before unknown", func(w *Workflow) { w.Add("a", task("a"), Before("nope")) }, `node "a" names "nope", which is no node`},
	}
	for _, c := range cases {
		w := NewWorkflow()
		c.build(w)
		_, err := b.client.EnqueueWorkflow(ctx, w)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	_, err := b.client.EnqueueWorkflow(ctx, big)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "10001 nodes") {
		t.Fatalf("too big: %v", err)
	}
	// the prefix's protocol version is the client's, recorded at its first call
	if n := b.rdb.DBSize(ctx).Val() - b.rdb.Exists(ctx, keys.Protocol(b.cfg.Prefix)).Val(); n != 0 {
		t.Fatalf("refused workflows wrote %d keys", n)
	}
}

// TestWorkflowExtendRefused: an extension that reuses a node name, names
// a parent the workflow lacks, or targets an unknown workflow writes
// nothing; the workflow is unchanged.
func TestWorkflowExtendRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	w := NewWorkflow()
	w.Add("a", NewRawTask("a", nil))
	w.Add("b", NewRawTask("b", nil), After("a"))
	id, err := b.client.EnqueueWorkflow(ctx, w)
	must(t, err)
	key := keys.Home(b.cfg.Prefix, keys.HomeOf(id)).Workflow(id)
	before := b.rdb.HGetAll(ctx, key).Val()
	for _, c := range []struct {
		build func(w *Workflow)
		want  error
		text  string
	}{
		{func(w *Workflow) {
			w.Add("b", NewRawTask("b", nil))
			w.Add("new", NewRawTask("new", nil))
		}, ErrInvalid, `already has a node "b"`},
		{func(w *Workflow) {
			w.Add("c", NewRawTask("c", nil), After("a"))
			w.Add("d", NewRawTask("d", nil), After("zz"))
		}, ErrInvalid, `names "zz", which is no node`},
	} {
		more := NewWorkflow()
		c.build(more)
		err := b.client.ExtendWorkflow(ctx, id, more)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("extend: %v, want %v with %q", err, c.want, c.text)
		}
	}
	// an edge into a node that no longer waits, and one that makes a cycle
	for _, c := range []struct {
		build func(w *Workflow)
		text  string
	}{
		{func(w *Workflow) { w.Add("c", NewRawTask("c", nil), Before("a")) }, `node "c" is to come before "a", which no longer waits`},
		{func(w *Workflow) { w.Add("c", NewRawTask("c", nil), After("b"), Before("b")) }, `node "c" before "b" makes a cycle`},
	} {
		more := NewWorkflow()
		c.build(more)
		if err := b.client.ExtendWorkflow(ctx, id, more); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("extend: %v, want ErrInvalid with %q", err, c.text)
		}
	}
	after := b.rdb.HGetAll(ctx, key).Val()
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused extension changed the workflow:\n%v\n%v", before, after)
	}
	more := NewWorkflow()
	more.Add("c", NewRawTask("c", nil))
	if err := b.client.ExtendWorkflow(ctx, "0190a0a0-0000-7000-8000-000000000000", more); !errors.Is(err, ErrNotFound) {
		t.Fatalf("extend unknown: %v", err)
	}
	if _, err := b.insp.GetWorkflow(ctx, "0190a0a0-0000-7000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	if err := b.insp.CancelWorkflow(ctx, "0190a0a0-0000-7000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	if _, err := b.insp.NodeResult(ctx, "0190a0a0-0000-7000-8000-000000000000", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("result of an unknown workflow: %v", err)
	}
	if _, err := b.insp.NodeResult(ctx, id, "zz"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("result of an unknown node: %v", err)
	}
	wi, err := b.insp.GetWorkflow(ctx, id)
	must(t, err)
	if wi.State != StateActive || len(wi.Nodes) != 2 || wi.Node("a").State != StateEnqueued || wi.Node("b").State != StateWaiting {
		t.Fatalf("workflow after refused extensions: %+v", wi)
	}
	sum, err := b.insp.WorkflowSummary(ctx, id)
	must(t, err)
	if sum.Total != 2 || sum.Edges != 1 || sum.Counts[StateEnqueued] != 1 || sum.Counts[StateWaiting] != 1 || sum.Counts[StateSucceeded] != 0 || len(sum.Nodes) != 0 {
		t.Fatalf("summary: %+v", sum)
	}
	if _, err := b.insp.WorkflowSummary(ctx, "0190a0a0-0000-7000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("summary of an unknown workflow: %v", err)
	}
}

// TestWorkflowRedisGone: with Redis gone, EnqueueWorkflow returns an
// error and no ID; once Redis is back, the same workflow is recorded.
func TestWorkflowRedisGone(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	w := NewWorkflow()
	w.Add("a", NewRawTask("a", nil))
	b.srv.Stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if id, err := b.client.EnqueueWorkflow(ctx, w); err == nil || id != "" {
		t.Fatalf("with Redis gone: %q, %v", id, err)
	}
	b.srv.Restart(t)
	id, err := b.client.EnqueueWorkflow(context.Background(), w)
	must(t, err)
	wi, err := b.insp.GetWorkflow(context.Background(), id)
	must(t, err)
	if wi.Node("a").State != StateEnqueued {
		t.Fatalf("after the restart: %+v", wi)
	}
}

// TestWorkflowRecordStaged: a new workflow's fields go in one transaction
// with the script that makes them the workflow. Recorded with Redis's
// script cache empty, it is whole, it has no expiry while it runs, and no
// staging key is left. Recorded
// again under the ID it took, it is refused: the first is unchanged and
// the second's fields are gone.
func TestWorkflowRecordStaged(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	w := NewWorkflow()
	w.Add("a", NewRawTask("a", []byte("first")))
	w.Add("b", NewRawTask("b", nil), After("a"))
	must(t, b.rdb.ScriptFlush(ctx).Err())
	id, err := b.client.EnqueueWorkflow(ctx, w)
	must(t, err)
	wi, err := b.insp.GetWorkflow(ctx, id)
	must(t, err)
	if wi.Node("a").State != StateEnqueued || wi.Node("b").State != StateWaiting {
		t.Fatalf("recorded after a script flush: %+v", wi)
	}
	staged := func() []string {
		ks, err := b.rdb.Keys(ctx, "*:new").Result()
		must(t, err)
		return ks
	}
	if ks := staged(); len(ks) != 0 {
		t.Fatalf("staging keys left: %v", ks)
	}
	W := keys.Home(b.client.cfg.Prefix, keys.HomeOf(id)).Workflow(id)
	// the staging key's expiry does not pass to the running workflow
	if ttl := b.rdb.PTTL(ctx, W).Val(); ttl != -1 {
		t.Fatalf("workflow %s expires in %v while it runs, want no expiry", id, ttl)
	}
	before, err := b.rdb.HGetAll(ctx, W).Result()
	must(t, err)
	again := NewWorkflow()
	again.Add("c", NewRawTask("c", nil))
	recorded, _, err := b.client.recordWorkflow(ctx, id, again, "new")
	if recorded || err == nil || !strings.Contains(err.Error(), "ID taken") {
		t.Fatalf("recorded again under %s: %v, %v; want refused, ID taken", id, recorded, err)
	}
	after, err := b.rdb.HGetAll(ctx, W).Result()
	must(t, err)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the first workflow changed:\nbefore %v\nafter  %v", before, after)
	}
	if ks := staged(); len(ks) != 0 {
		t.Fatalf("staging keys left after the refusal: %v", ks)
	}
}
