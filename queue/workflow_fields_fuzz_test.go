package queue

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/wire"
)

// FuzzWorkflowFields: the readers of a workflow hash's fields, which come
// from Redis, end on any bytes without a panic and keep their promises:
// a node route (m:) decodes or is an error, a children or join list
// (c:, join) gives names that are not empty, a state (s:) names one
// state or is its stored one-byte code, a workflow's state is active for
// Redis's "running" and as stored otherwise, and a batch member's name gives
// its 16-byte task ID or none.
func FuzzWorkflowFields(f *testing.F) {
	route, err := msgpack.Marshal([]any{"0123456789abcdef", "q", "t", 0})
	if err != nil {
		f.Fatal(err)
	}
	packed, err := msgpack.Marshal([][]string{{"a", "f"}, {"b", "r"}})
	if err != nil {
		f.Fatal(err)
	}
	member := home.MemberName(wire.NewID())
	for _, seed := range []string{
		string(route), string(route[:len(route)-2]), string(packed), "\x93\xa1a",
		"fa rB kc", "ron-complete fon-success", "F", "",
		"w", "p", "s", "d", "f", "k", "c", "2uu",
		member, ".", ".AAAA", "plain", "running", "succeeded", "cancelled",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if m, err := nodeMeta(v); err == nil && len(m.id) > len(v) {
			t.Fatalf("nodeMeta(%q): an ID of %d bytes from %d", v, len(m.id), len(v))
		}
		for _, c := range childList(v) {
			if c[0] == "" {
				t.Fatalf("childList(%q): an empty name in %v", v, c)
			}
		}
		if s := nodeState(v); len(s) > 1 && !knownNodeState(s) {
			t.Fatalf("nodeState(%q) = %q: neither a state nor the stored code", v, s)
		}
		if s := workflowState(v); v == "running" && s != StateActive || v != "running" && string(s) != v {
			t.Fatalf("workflowState(%q) = %q: want active for Redis's \"running\", else the stored state", v, s)
		}
		if id := home.MemberID(v); id != "" && len(id) != 16 {
			t.Fatalf("MemberID(%q) = %d bytes, want 16 or none", v, len(id))
		}
	})
}

func knownNodeState(s State) bool {
	if s == StateWaiting {
		return true
	}
	for _, k := range nodeStates {
		if k.state == s {
			return true
		}
	}
	return false
}
