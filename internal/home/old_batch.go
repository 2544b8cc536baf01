package home

import (
	"strings"

	"github.com/shardq/shardq/internal/keys"
)

// A batch 0.1.0 created keeps its own records, H:b:<id> and H:bm:<id>
// (lua/engine/include/batch_apply.lua), not a workflow's hash. This file
// reads them as the workflow a batch is since (queue/batch.go): its
// members as roots, its gate, succeeded once it was closed, and its
// callbacks, the join nodes. It goes in 0.3.0, with those scripts.

// OldBatch is a batch 0.1.0 created, as a batch's workflow would hold it.
type OldBatch struct {
	Desc, Parent string
	// State is spelled as a workflow's hash spells it: running,
	// succeeded or failed.
	State             string
	Created, Finished int64 // unix ms; Finished is 0 while running
	// Total counts the nodes: the members, the gate and the callbacks;
	// Counts the nodes per state letter (include/wf_names.lua).
	Total  int
	Counts map[string]int
	// Nodes are the gate and the callbacks; OldMember reads the members.
	Nodes []OldNode
	// Join lists the callbacks as a workflow's join field does.
	Join string
}

// OldNode is a node of a batch 0.1.0 created: its name, its task's
// stored ID ("" for none) and its state letter.
type OldNode struct {
	Name, ID, State string
}

// ReadOldBatch reads f, the record H:b:<id> of a batch 0.1.0 created.
func ReadOldBatch(f map[string]string) OldBatch {
	b := OldBatch{Desc: f["desc"], Parent: f["parent"], Created: atoi64(f["created"]), Total: int(atoi64(f["total"]))}
	b.Counts = map[string]int{"p": int(atoi64(f["pending"])), "s": int(atoi64(f["succeeded"])), "d": int(atoi64(f["dead"]))}
	finished := atoi64(f["finished"]) > 0
	gate := OldNode{Name: Gate, State: "p"}
	if f["closed"] == "1" {
		gate.State = "s"
	}
	b.Nodes = []OldNode{gate}
	active, bad := !finished, b.Counts["d"] > 0
	var join []string
	for _, c := range []struct{ key, name, edge string }{{"cbs", OnSuccess, "f"}, {"cbc", OnComplete, "r"}} {
		id := f[c.key+"_id"]
		if id == "" {
			continue
		}
		n := OldNode{Name: c.name, ID: id}
		switch done := f[c.key+"_done"]; {
		case done != "":
			n.State = done[:1]
		case atoi64(f[c.key+"_fired"]) > 0:
			n.State = "p"
		case finished:
			// once the members finished, only OnSuccess waits: a member
			// is dead, over its fail edge, until a retry succeeds
			n.State = "f"
		default:
			n.State = "w"
		}
		active = active || n.State == "p"
		bad = bad || n.State == "d" || n.State == "f"
		b.Nodes = append(b.Nodes, n)
		join = append(join, c.edge+c.name)
	}
	for _, n := range b.Nodes {
		b.Counts[n.State]++
	}
	b.Total += len(b.Nodes)
	b.Join = strings.Join(join, " ")
	switch {
	case active:
		b.State = "running"
		return b
	case bad:
		b.State = "failed"
	default:
		b.State = "succeeded"
	}
	// when its members finished: the record keeps no later time
	b.Finished = atoi64(f["finished"])
	return b
}

// OldMember reads one field of H:bm:<id>, a member and its state letter
// (p, s or d), as the node a batch since has: a task's name holds its
// task ID (MemberName), and a nested batch ("b:<id>") is taskless and
// named by its ID in 22 characters.
func OldMember(member, state string) OldNode {
	if child, ok := strings.CutPrefix(member, "b:"); ok {
		return OldNode{Name: "." + keys.ShortID(child), State: state}
	}
	return OldNode{Name: MemberName(member), ID: member, State: state}
}
