package home

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// A batch is a workflow of one shape (queue/batch.go): a taskless gate
// node, which Close makes succeed; its callbacks, the workflow's join
// nodes, whose parents are every other node with no field stored per
// edge (include/wf_joined.lua); and its members and nested batches,
// named by a dot and 22 characters. No node a caller adds to a
// workflow starts with a dot, so a task whose node does is a batch's.
const (
	Gate       = ".close"
	OnSuccess  = ".on-success"
	OnComplete = ".on-complete"
)

// Taskless is the route a taskless node records (a batch's gate, a
// nested batch), as workflow_add.lua packs it: {"", "", "", 0}.
var Taskless = []byte{0x94, 0xa0, 0xa0, 0xa0, 0x00}

// MemberName returns the node name of a member whose task's stored ID
// is id: a dot and the ID in 22 characters, so the member needs no field
// for its task ID once enqueued (include/wf_run_release.lua drops its
// route).
func MemberName(id string) string {
	return "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// MemberID returns the stored task ID a member's node name holds, or "".
func MemberID(name string) string {
	rest, ok := strings.CutPrefix(name, ".")
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if !ok || err != nil || len(b) != 16 {
		return ""
	}
	return string(b)
}

// IsBatchNode reports whether node name is a batch's.
func IsBatchNode(name string) bool { return strings.HasPrefix(name, ".") }

// Place returns the workflow a task with flow ref ref and stored ID
// taskID is a node of, and its node's name, as GetWorkflow names them: a
// batch's member (one 0.1.0 created too) by MemberName, a 0.1.0 chain's
// link by its number. Both are "" for a task of no workflow or a ref
// that does not parse.
func Place(ref, taskID string) (workflowID, node string) {
	if ref == "" {
		return "", ""
	}
	r, err := wire.ParseFlowRef(ref)
	if err != nil {
		return "", ""
	}
	switch r.Kind {
	case 'b':
		return r.ID, MemberName(taskID) // a batch 0.1.0 created
	case 'w':
		return keys.LongID(r.ID), r.Node
	}
	return r.ID, strconv.Itoa(r.Link) // a 0.1.0 chain
}

// MemberKey is the context key under which a worker's handler context
// answers the ID of the workflow (a batch among them) its task is a node
// of.
type MemberKey struct{}

// MemberOf returns the workflow whose node's task ctx runs, or "". A
// batch takes additions from its own members after it was closed: it
// cannot finish while they run.
func MemberOf(ctx context.Context) string {
	id, _ := ctx.Value(MemberKey{}).(string)
	return id
}
