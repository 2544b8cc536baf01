package queue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// TestOldBatchAsWorkflow: a batch 0.1.0 created, whose records
// (H:b:<id>, H:bm:<id>) are written here as 0.1.0's scripts wrote them,
// reads as the workflow a batch is since, in GetWorkflow and
// WorkflowSummary alike: members (tasks, and a nested batch's taskless
// node) as roots, the gate succeeded once closed, the callbacks waiting,
// enqueued once they went out, failed when a member is dead and
// OnSuccess could not go out; the workflow active until every callback
// that went out finished. An unknown ID is ErrNotFound.
func TestOldBatchAsWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	cbs, cbc := wire.NewID(), wire.NewID()
	m1, m2, m3 := wire.NewID(), wire.NewID(), wire.NewID()
	child := uuid.Must(uuid.NewV7()).String()
	write := func(rec map[string]any, members map[string]any) string {
		id := uuid.Must(uuid.NewV7()).String()
		h := keys.Home(b.cfg.Prefix, keys.HomeOf(id))
		base := map[string]any{"total": 0, "pending": 0, "succeeded": 0, "dead": 0, "closed": 0, "created": 1700000000000,
			"finished": 0, "desc": "old " + id[:4], "parent": "", "told": "", "ret": 0, "cbs_id": cbs, "cbs": "x",
			"cbs_fired": 0, "cbc_id": cbc, "cbc": "x", "cbc_fired": 0, "cbs_done": "", "cbc_done": ""}
		for k, v := range rec {
			base[k] = v
		}
		must(t, b.rdb.HSet(ctx, h.Batch(id), base).Err())
		if len(members) > 0 {
			must(t, b.rdb.HSet(ctx, h.Members(id), members).Err())
		}
		return id
	}
	type want struct {
		state              State
		counts             map[State]int
		gate, onSuc, onCom State
		finished           bool
	}
	for name, c := range map[string]struct {
		rec, members map[string]any
		want         want
	}{
		"open": {
			map[string]any{"total": 4, "pending": 3, "succeeded": 1, "parent": "0190a0a0-0000-7000-8000-000000000000"},
			map[string]any{m1: "p", m2: "s", m3: "p", "b:" + child: "p"},
			want{StateActive, map[State]int{StateEnqueued: 4, StateSucceeded: 1, StateWaiting: 2}, StateEnqueued, StateWaiting, StateWaiting, false},
		},
		"a member dead": {
			map[string]any{"total": 3, "succeeded": 2, "dead": 1, "closed": 1, "finished": 1700000005000, "cbc_fired": 1700000005000, "cbc_done": "s"},
			map[string]any{m1: "s", m2: "d", m3: "s"},
			want{StateFailed, map[State]int{StateSucceeded: 4, StateDead: 1, StateFailed: 1}, StateSucceeded, StateFailed, StateSucceeded, true},
		},
		"a callback runs": {
			map[string]any{"total": 3, "succeeded": 3, "closed": 1, "finished": 1700000005000, "cbs_fired": 1700000005000,
				"cbc_fired": 1700000005000, "cbs_done": "s"},
			map[string]any{m1: "s", m2: "s", m3: "s"},
			want{StateActive, map[State]int{StateSucceeded: 5, StateEnqueued: 1}, StateSucceeded, StateSucceeded, StateEnqueued, false},
		},
	} {
		id := write(c.rec, c.members)
		wi, err := b.insp.GetWorkflow(ctx, id)
		must(t, err)
		sum, err := b.insp.WorkflowSummary(ctx, id)
		must(t, err)
		members := len(c.members)
		parent, _ := c.rec["parent"].(string)
		for _, w := range []*WorkflowInfo{wi, sum} {
			counted := len(w.Counts) == len(nodeStates)
			for _, s := range nodeStates {
				counted = counted && w.Counts[s.state] == c.want.counts[s.state]
			}
			if w.State != c.want.state || !counted || w.Total != members+3 ||
				w.Description != "old "+id[:4] || w.Parent != parent ||
				w.FinishedAt.IsZero() == c.want.finished || w.CreatedAt.UnixMilli() != 1700000000000 {
				t.Fatalf("%s: %+v, want %+v", name, w, c.want)
			}
			for node, st := range map[string]State{home.Gate: c.want.gate, home.OnSuccess: c.want.onSuc, home.OnComplete: c.want.onCom} {
				if n := w.Node(node); n == nil || n.State != st {
					t.Fatalf("%s: node %s: %+v, want %s", name, node, n, st)
				}
			}
		}
		// as a batch's since, the summary has no edges: the callbacks'
		// are not stored, and GetWorkflow counts them
		if len(sum.Nodes) != 3 || len(wi.Nodes) != members+3 || sum.Edges != 0 || wi.Edges != 2*(members+1) || wi.Node(home.Gate).TaskID != "" ||
			wi.Node(home.OnSuccess).TaskID != wire.PublicID(cbs) || wi.Node(home.OnComplete).TaskID != wire.PublicID(cbc) {
			t.Fatalf("%s: nodes %+v, summary's %+v", name, wi.Nodes, sum.Nodes)
		}
		for stored, st := range c.members {
			var n *WorkflowNode
			if stored == "b:"+child {
				n = wi.Node("." + keys.ShortID(child))
				if n == nil || n.TaskID != "" {
					t.Fatalf("%s: the nested batch's node: %+v", name, n)
				}
			} else if n = wi.Node(home.MemberName(stored)); n == nil || n.TaskID != wire.PublicID(stored) {
				t.Fatalf("%s: member %s: %+v", name, wire.PublicID(stored), n)
			}
			if n.State != nodeState(st.(string)) || len(n.Parents) != 0 {
				t.Fatalf("%s: member %s: %+v, want %s", name, n.Name, n, st)
			}
		}
		for cb, policy := range map[string]EdgePolicy{home.OnSuccess: EdgeFail, home.OnComplete: EdgeRun} {
			n := wi.Node(cb)
			if len(n.Parents) != members+1 {
				t.Fatalf("%s: %s has %d parents, want the gate and %d members", name, cb, len(n.Parents), members)
			}
			for _, p := range n.Parents {
				if p.OnDead != policy || wi.Node(p.Parent) == nil || p.Parent == home.OnSuccess || p.Parent == home.OnComplete {
					t.Fatalf("%s: %s's parent %+v", name, cb, p)
				}
			}
		}
	}
	if _, err := b.insp.GetWorkflow(ctx, uuid.Must(uuid.NewV7()).String()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetWorkflow of an unknown ID: %v, want ErrNotFound", err)
	}
	if _, err := b.insp.WorkflowSummary(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("WorkflowSummary of an unknown ID: %v, want ErrNotFound", err)
	}
}

// FuzzOldBatch: the records of a batch 0.1.0 created, which come from
// Redis, read as a workflow on any field values without a panic: one gate
// and at most two callbacks, each in a node state or its stored one-byte
// code, a workflow state, and the counts of those nodes among the counts.
func FuzzOldBatch(f *testing.F) {
	f.Add("3", "1", "1", "1", "0", "1", "cb-1", "s", "0", "b:0192f0c4-5b7e-7c3e-9d1a-6f2b8c4e5a10", "p")
	f.Add("", "", "", "", "", "", "", "", "", "", "")
	f.Add("-9", "x", "99999999999999999999", "1", "17", "0", "id", "", "5", "member", "dd")
	f.Add("1", "0", "0", "0", "0", "1", "x", "\xff", "", "b:", "")
	f.Fuzz(func(t *testing.T, total, pending, succeeded, dead, finished, closed, cbID, cbDone, cbFired, member, state string) {
		w := readOldBatch("id", map[string]string{"total": total, "pending": pending, "succeeded": succeeded, "dead": dead,
			"finished": finished, "closed": closed, "cbs_id": cbID, "cbs_done": cbDone, "cbs_fired": cbFired,
			"cbc_id": cbID, "cbc_done": cbDone, "cbc_fired": cbFired})
		if len(w.Nodes) < 1 || len(w.Nodes) > 3 || w.Nodes[0].Name != home.Gate {
			t.Fatalf("nodes %+v: want the gate first and at most two callbacks", w.Nodes)
		}
		for _, n := range w.Nodes {
			if !knownNodeState(n.State) && len(n.State) != 1 {
				t.Fatalf("node %+v: want a node state or a one-letter code", n)
			}
		}
		if w.State != StateActive && w.State != StateSucceeded && w.State != StateFailed {
			t.Fatalf("state %q", w.State)
		}
		if (cbID == "") != (w.join == "") {
			t.Fatalf("callback ID %q, join %q", cbID, w.join)
		}
		p := oldMember(member, state)
		if !home.IsBatchNode(p.Name) || p.State != nodeState(state) {
			t.Fatalf("oldMember(%q, %q) = %+v", member, state, p)
		}
		nested := strings.HasPrefix(member, "b:")
		if nested && p.TaskID != "" || !nested && (p.TaskID != wire.PublicID(member) || len(member) == 16 && home.MemberID(p.Name) != member) {
			t.Fatalf("oldMember(%q) = %+v: want a task's ID kept, a nested batch's none", member, p)
		}
	})
}
