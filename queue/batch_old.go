package queue

import (
	"context"
	"fmt"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
)

// A batch 0.1.0 created keeps its own records, which this file reads as
// the workflow a batch is since (internal/home/old_batch.go). It goes in
// 0.3.0.

// oldBatch returns the summary of batch id from the record 0.1.0 wrote,
// or ErrNotFound when there is none either.
func (i *Inspector) oldBatch(ctx context.Context, id string) (*WorkflowInfo, error) {
	h := keys.Home(i.cfg.Prefix, keys.HomeOf(id))
	var rec map[string]string
	err := rcall.Do(ctx, i.rdb, func() error {
		var err error
		rec, err = i.rdb.HGetAll(ctx, h.Batch(id)).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", id, err)
	}
	if len(rec) == 0 {
		return nil, fmt.Errorf("workflow %s: %w", id, errWorkflowNotFound)
	}
	b := home.ReadOldBatch(rec)
	w := &WorkflowInfo{ID: id, State: workflowState(b.State), Total: b.Total, Counts: make(map[State]int, len(nodeStates)),
		Description: b.Desc, Parent: b.Parent, CreatedAt: msTime(b.Created), FinishedAt: msTime(b.Finished), join: b.Join, old: true}
	for _, s := range nodeStates {
		w.Counts[s.state] = b.Counts[s.code]
	}
	w.Nodes = sortedNodes(oldNodes(b.Nodes))
	return w, nil
}

// oldBatchNodes returns the nodes of w, a batch 0.1.0 created: its
// members, read from their record in one round trip per 2,000, and its
// gate and callbacks. The record keeps no member's queue, type or error.
func (i *Inspector) oldBatchNodes(ctx context.Context, w *WorkflowInfo) ([]placedNode, error) {
	key := keys.Home(i.cfg.Prefix, keys.HomeOf(w.ID)).Members(w.ID)
	var members []home.OldNode
	var cursor uint64
	for {
		var vals []string
		err := rcall.Do(ctx, i.rdb, func() error {
			var err error
			vals, cursor, err = i.rdb.HScan(ctx, key, cursor, "*", workflowScan).Result()
			return err
		})
		if err != nil {
			return nil, err
		}
		for j := 0; j+1 < len(vals); j += 2 {
			members = append(members, home.OldMember(vals[j], vals[j+1]))
		}
		if cursor == 0 {
			break
		}
	}
	nodes := oldNodes(members)
	for _, n := range w.Nodes {
		nodes = append(nodes, placedNode{n, wire.StoredID(n.TaskID)})
	}
	return nodes, nil
}

// oldNodes returns ns as nodes, each ordered by its stored task ID.
func oldNodes(ns []home.OldNode) []placedNode {
	out := make([]placedNode, len(ns))
	for k, n := range ns {
		out[k] = placedNode{WorkflowNode{Name: n.Name, TaskID: wire.PublicID(n.ID), State: nodeState(n.State)}, n.ID}
	}
	return out
}
