package home

import (
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/wire"
)

// FuzzPlace: a message's flow ref, which comes from Redis, gives a task's
// workflow and node on any bytes without a panic: none for a ref that
// does not parse, the ref's own node for a workflow's, and for a member
// of a batch 0.1.0 created the name whose ID MemberID gives back.
func FuzzPlace(f *testing.F) {
	for _, seed := range []struct{ ref, id string }{
		{"w3:AZLrQt8TcjSSGH2gYZ3Q9g:n1", "id"}, {"w0:plain-id:a:b", "id"},
		{"b7:batch-1", "0123456789abcdef"}, {"b7:batch-1", ""}, {"c2:chain-1:3", "id"},
		{"c2:chain-1:x", "id"}, {"", "id"}, {"w", ""}, {"x1:y", "id"}, {"w-1:id:n", "id"},
	} {
		f.Add(seed.ref, seed.id)
	}
	f.Fuzz(func(t *testing.T, ref, id string) {
		wf, node := Place(ref, id)
		r, err := wire.ParseFlowRef(ref)
		if err != nil || ref == "" {
			if wf != "" || node != "" {
				t.Fatalf("Place(%q) = %q, %q for a ref that does not parse", ref, wf, node)
			}
			return
		}
		if wf == "" {
			t.Fatalf("Place(%q) names no workflow for a ref that parses", ref)
		}
		switch r.Kind {
		case 'w':
			if node != r.Node {
				t.Fatalf("Place(%q): node %q, want the ref's %q", ref, node, r.Node)
			}
		case 'b':
			if !IsBatchNode(node) || (id != "" && MemberID(node) != id && len(id) == 16) {
				t.Fatalf("Place(%q, %q): node %q, not the member's name", ref, id, node)
			}
		}
	})
}

// FuzzOldBatch: the records of a batch 0.1.0 created, which come from
// Redis, read as a workflow on any field values without a panic: one gate
// and at most two callbacks, each a one-letter state, a workflow state,
// and the counts of those nodes among the counts.
func FuzzOldBatch(f *testing.F) {
	f.Add("3", "1", "1", "1", "0", "1", "cb-1", "s", "0", "b:0192f0c4-5b7e-7c3e-9d1a-6f2b8c4e5a10", "p")
	f.Add("", "", "", "", "", "", "", "", "", "", "")
	f.Add("-9", "x", "99999999999999999999", "1", "17", "0", "id", "", "5", "member", "dd")
	f.Add("1", "0", "0", "0", "0", "1", "x", "\xff", "", "b:", "")
	f.Fuzz(func(t *testing.T, total, pending, succeeded, dead, finished, closed, cbID, cbDone, cbFired, member, state string) {
		b := ReadOldBatch(map[string]string{"total": total, "pending": pending, "succeeded": succeeded, "dead": dead,
			"finished": finished, "closed": closed, "cbs_id": cbID, "cbs_done": cbDone, "cbs_fired": cbFired,
			"cbc_id": cbID, "cbc_done": cbDone, "cbc_fired": cbFired})
		if len(b.Nodes) < 1 || len(b.Nodes) > 3 || b.Nodes[0].Name != Gate {
			t.Fatalf("nodes %+v: want the gate first and at most two callbacks", b.Nodes)
		}
		for _, n := range b.Nodes {
			if len(n.State) != 1 {
				t.Fatalf("node %+v: want a one-letter state", n)
			}
		}
		if b.State != "running" && b.State != "succeeded" && b.State != "failed" {
			t.Fatalf("state %q", b.State)
		}
		if (cbID == "") != (b.Join == "") {
			t.Fatalf("callback ID %q, join %q", cbID, b.Join)
		}
		n := OldMember(member, state)
		if !IsBatchNode(n.Name) || n.State != state {
			t.Fatalf("OldMember(%q, %q) = %+v", member, state, n)
		}
		nested := strings.HasPrefix(member, "b:")
		if nested && n.ID != "" || !nested && (n.ID != member || len(member) == 16 && MemberID(n.Name) != member) {
			t.Fatalf("OldMember(%q) = %+v: want a task's ID kept, a nested batch's none", member, n)
		}
	})
}
