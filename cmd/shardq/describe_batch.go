package main

import (
	"fmt"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/queue"
)

// batchJSON is what a batch adds to its workflow, as the dashboard's
// batch page shows it: its members (every node but the gate and the
// callbacks) per state, and whether it was closed.
type batchJSON struct {
	Members   int  `json:"members"`
	Pending   int  `json:"pending"` // neither succeeded nor dead yet
	Succeeded int  `json:"succeeded"`
	Dead      int  `json:"dead"`
	Closed    bool `json:"closed"`
}

// newBatchJSON counts w's members; nil when w is no batch (it has no
// gate).
func newBatchJSON(w *queue.WorkflowInfo) *batchJSON {
	if w.Node(home.Gate) == nil {
		return nil
	}
	b := &batchJSON{}
	for _, n := range w.Nodes {
		switch n.Name {
		case home.Gate:
			b.Closed = n.State == queue.StateSucceeded // CloseBatch makes it succeed
			continue
		case home.OnSuccess, home.OnComplete:
			continue
		}
		b.Members++
		switch n.State {
		case queue.StateSucceeded:
			b.Succeeded++
		case queue.StateDead:
			b.Dead++
		default:
			b.Pending++
		}
	}
	return b
}

// line says a batch's progress for describe's text.
func (b *batchJSON) line() string {
	closed := "open: members may still be added"
	if b.Closed {
		closed = "closed"
	}
	return fmt.Sprintf("%d members: %d pending, %d succeeded, %d dead; %s", b.Members, b.Pending, b.Succeeded, b.Dead, closed)
}
