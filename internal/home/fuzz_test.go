package home

import (
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
