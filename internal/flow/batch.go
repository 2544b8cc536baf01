package flow

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/shardq/shardq/internal/wire"
)

// A batch is a workflow of one shape (queue/flows.go): a taskless gate
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

// MaxBatchNodes bounds a batch's nodes, nested batches among them: a
// member costs one field of its workflow's hash once enqueued, so far
// more fit than a graph's 10,000 nodes.
const MaxBatchNodes = 1_000_000

// Taskless is the route a taskless node records (a batch's gate, a
// nested batch), as flow_workflow.lua packs it: {"", "", "", 0}.
var Taskless = []byte{0x94, 0xa0, 0xa0, 0xa0, 0x00}

// NewMember returns a new member's task ID (stored) and its node name: a
// dot and the ID in 22 characters, so the member needs no field for its
// task ID once enqueued (include/wf_run_release.lua drops its route).
func NewMember() (id, name string) {
	id = wire.NewID()
	return id, "." + base64.RawURLEncoding.EncodeToString([]byte(id))
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

// BatchFields are the fields of a batch's workflow hash that ReadBatch
// reads, in order.
var BatchFields = []string{"state", "n", "created", "finished", "desc", "up", "gate", "cnt_s", "cnt_d", "s:" + Gate,
	"m:" + OnSuccess, "s:" + OnSuccess, "t:" + OnSuccess, "m:" + OnComplete, "s:" + OnComplete, "t:" + OnComplete}

// BatchRead is a batch's progress as its home keeps it.
type BatchRead struct {
	Desc, Parent                    string
	Total, Pending, Succeeded, Dead int
	Closed, Finished                bool
	Created, FinishedAt             int64 // unix ms, 0 = not yet
	// Callbacks: OnSuccess, then OnComplete
	Callbacks [2]Callback
}

// Callback is a batch's callback: its task's stored ID ("" = none), its
// state as a node's letter (w waiting, p enqueued, s succeeded, d dead),
// and when it went out (unix ms, 0 = not yet).
type Callback struct {
	ID    string
	State byte
	Fired int64
}

// ReadBatch reads a batch's workflow hash, whose BatchFields are v; ok
// is false when the hash is a workflow's of another shape.
func ReadBatch(v []string) (b BatchRead, ok bool) {
	f := make(map[string]string, len(v))
	for i, name := range BatchFields {
		f[name] = v[i]
	}
	if f["gate"] == "" {
		return b, false
	}
	b = BatchRead{Desc: f["desc"], Closed: f["s:"+Gate] == "s", Created: atoi64(f["created"])}
	if up, _, ok := strings.Cut(f["up"], " "); ok {
		b.Parent = up
	}
	// the members: every node but the gate and the callbacks
	b.Total, b.Succeeded, b.Dead = int(atoi64(f["n"]))-1, int(atoi64(f["cnt_s"])), int(atoi64(f["cnt_d"]))
	if b.Closed {
		b.Succeeded--
	}
	for i, name := range []string{OnSuccess, OnComplete} {
		var m []any
		if wire.Unmarshal([]byte(f["m:"+name]), &m) != nil || len(m) == 0 {
			continue
		}
		id, _ := m[0].(string)
		c := Callback{ID: id, State: 'w', Fired: atoi64(f["t:"+name])}
		b.Total--
		switch st := f["s:"+name]; st {
		case "s", "d", "p":
			c.State = st[0]
			b.Succeeded -= boolInt(st == "s")
			b.Dead -= boolInt(st == "d")
		}
		// else waiting, or failed by a dead member a retry may yet make
		// succeed: not gone out
		b.Callbacks[i] = c
	}
	b.Pending = b.Total - b.Succeeded - b.Dead
	b.Finished = b.Closed && b.Pending == 0
	if b.Finished {
		b.FinishedAt = atoi64(f["finished"])
		for _, c := range b.Callbacks {
			if c.Fired > 0 && (b.FinishedAt == 0 || c.Fired < b.FinishedAt) {
				b.FinishedAt = c.Fired
			}
		}
	}
	return b, true
}

// ReadOldBatch reads the record of a batch 0.1.0 created; it goes in
// 0.3.0.
func ReadOldBatch(f map[string]string) BatchRead {
	b := BatchRead{
		Desc: f["desc"], Parent: f["parent"], Closed: f["closed"] == "1",
		Total: int(atoi64(f["total"])), Pending: int(atoi64(f["pending"])), Succeeded: int(atoi64(f["succeeded"])), Dead: int(atoi64(f["dead"])),
		Created: atoi64(f["created"]), FinishedAt: atoi64(f["finished"]),
	}
	b.Finished = b.FinishedAt > 0
	for i, k := range []string{"cbs", "cbc"} {
		c := Callback{ID: f[k+"_id"], State: 'w', Fired: atoi64(f[k+"_fired"])}
		switch {
		case f[k+"_done"] != "":
			c.State = f[k+"_done"][0]
		case c.Fired > 0:
			c.State = 'p'
		}
		b.Callbacks[i] = c
	}
	return b
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
