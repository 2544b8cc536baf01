package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// A batch 0.1.0 created keeps its own records, H:b:<id> and H:bm:<id>
// (lua/engine/include/batch_apply.lua), not a workflow's hash. This file
// reads them as the workflow a batch is since (batch.go): its members as
// roots, its gate, succeeded once it was closed, and its callbacks, the
// join nodes. It goes in 0.3.0, with those scripts.

// oldBatch returns the summary of batch id from the record 0.1.0 wrote,
// or ErrNotFound when there is none either.
func (i *Inspector) oldBatch(ctx context.Context, id string) (*WorkflowInfo, error) {
	h := keys.Home(i.cfg.Prefix, keys.HomeOf(id))
	rec, err := doValue(ctx, i.rdb, func() (map[string]string, error) { return i.rdb.HGetAll(ctx, h.Batch(id)).Result() })
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", id, err)
	}
	if len(rec) == 0 {
		return nil, fmt.Errorf("workflow %s: %w", id, errWorkflowNotFound)
	}
	return readOldBatch(id, rec), nil
}

// readOldBatch reads f, the record H:b:<id> of batch id, as the summary
// of a batch's workflow: its nodes are its gate and its callbacks.
func readOldBatch(id string, f map[string]string) *WorkflowInfo {
	// counts by the states' stored letters (nodeStates)
	counts := map[string]int{"p": atoi(f["pending"]), "s": atoi(f["succeeded"]), "d": atoi(f["dead"])}
	var own []WorkflowNode
	add := func(name, sid, state string) {
		counts[state]++
		own = append(own, WorkflowNode{Name: name, TaskID: wire.PublicID(sid), State: nodeState(state)})
	}
	finished := atoi(f["finished"]) > 0
	active, bad := !finished, counts["d"] > 0
	gate := "p"
	if f["closed"] == "1" {
		gate = "s"
	}
	add(home.Gate, "", gate)
	var join []string
	for _, c := range []struct{ key, name, edge string }{{"cbs", home.OnSuccess, "f"}, {"cbc", home.OnComplete, "r"}} {
		sid, state := f[c.key+"_id"], "w"
		if sid == "" {
			continue
		}
		switch done := f[c.key+"_done"]; {
		case done != "":
			state = done[:1]
		case atoi(f[c.key+"_fired"]) > 0:
			state = "p"
		case finished:
			// once the members finished, only OnSuccess waits: a member
			// is dead, over its fail edge, until a retry succeeds
			state = "f"
		}
		active = active || state == "p"
		bad = bad || state == "d" || state == "f"
		add(c.name, sid, state)
		join = append(join, c.edge+c.name)
	}
	w := &WorkflowInfo{ID: id, State: StateSucceeded, Total: atoi(f["total"]) + len(own), Counts: make(map[State]int, len(nodeStates)),
		Description: f["desc"], Parent: f["parent"], CreatedAt: msTime(int64(atoi(f["created"]))),
		Nodes: own, join: strings.Join(join, " "), old: true}
	sortNodes(w.Nodes)
	for _, s := range nodeStates {
		w.Counts[s.state] = counts[s.code]
	}
	switch {
	case active:
		w.State = StateActive
		return w
	case bad:
		w.State = StateFailed
	}
	// when its members finished: the record keeps no later time
	w.FinishedAt = msTime(int64(atoi(f["finished"])))
	return w
}

// oldBatchNodes returns the nodes of w, a batch 0.1.0 created: its
// members, read from their record in one round trip per 2,000, and its
// gate and callbacks. The record keeps no member's queue, type or error.
func (i *Inspector) oldBatchNodes(ctx context.Context, w *WorkflowInfo) ([]WorkflowNode, error) {
	nodes := slices.Clone(w.Nodes)
	key := keys.Home(i.cfg.Prefix, keys.HomeOf(w.ID)).Members(w.ID)
	err := i.scanHash(ctx, key, "*", func(m, st string) { nodes = append(nodes, oldMember(m, st)) })
	return nodes, err
}

// oldMember reads one field of H:bm:<id>, a member and its state letter
// (p, s or d), as the node a batch since has: a task's name holds its
// task ID (home.MemberName), and a nested batch ("b:<id>") is taskless
// and named by its ID in 22 characters.
func oldMember(member, state string) WorkflowNode {
	if child, ok := strings.CutPrefix(member, "b:"); ok {
		return WorkflowNode{Name: "." + keys.ShortID(child), State: nodeState(state)}
	}
	return WorkflowNode{Name: home.MemberName(member), TaskID: wire.PublicID(member), State: nodeState(state)}
}
