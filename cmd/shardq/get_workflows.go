package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// maxWorkflows bounds get workflows, as the dashboard bounds its
// workflows page: one read per workflow home for the list, then one per
// workflow listed.
const maxWorkflows = 100

// workflowJSON is a workflow's summary as --output json prints it.
type workflowJSON struct {
	Kind string `json:"kind"` // "workflow" or "batch"
	ID   string `json:"id"`
	// State is "" for a workflow whose record expired since it was listed.
	State      string         `json:"state,omitempty"`
	Why        string         `json:"why,omitempty"`
	Total      int            `json:"total"` // nodes
	Edges      int            `json:"edges"`
	Counts     map[string]int `json:"counts,omitempty"`
	CreatedAt  time.Time      `json:"created_at,omitzero"`
	FinishedAt time.Time      `json:"finished_at,omitzero"`
}

// newWorkflowJSON is w's summary as JSON.
func newWorkflowJSON(kind string, w *queue.WorkflowInfo) workflowJSON {
	v := workflowJSON{Kind: kind, ID: w.ID, State: string(w.State), Why: w.Why, Total: w.Total, Edges: w.Edges,
		Counts: map[string]int{}, CreatedAt: w.CreatedAt, FinishedAt: w.FinishedAt}
	for s, n := range w.Counts {
		if n > 0 {
			v.Counts[string(s)] = n
		}
	}
	return v
}

// finishedNodes counts the nodes neither waiting nor enqueued.
func (v workflowJSON) finishedNodes() int {
	return v.Total - v.Counts[string(queue.StateWaiting)] - v.Counts[string(queue.StateEnqueued)]
}

// getWorkflows lists the newest workflows with their progress, as the
// dashboard's workflows page reads them: the recent list of each home
// (inspect.RecentFlows), then each one's summary.
func getWorkflows(ctx context.Context, m *Main, s *session, f *getFlags, _ []string) error {
	recent, err := inspect.RecentFlows(ctx, s.insp, f.limit)
	if err != nil {
		return err
	}
	if len(recent) == 0 {
		if err := s.nothing(ctx); err != nil {
			return err
		}
	}
	out := make([]workflowJSON, 0, len(recent))
	for _, r := range recent {
		w, err := s.insp.WorkflowSummary(ctx, r.ID)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			// its retention ended since it was listed
			out = append(out, workflowJSON{Kind: r.Kind, ID: r.ID, CreatedAt: r.CreatedAt})
			continue
		case err != nil:
			return err
		}
		out = append(out, newWorkflowJSON(r.Kind, w))
	}
	if f.out.json() {
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "ID"}, column{head: "KIND"}, column{head: "STATE"}, num("NODES"), column{head: "CREATED"})
	now := time.Now()
	for _, v := range out {
		t.add(v.ID, v.Kind, dash(v.State), fmt.Sprintf("%d/%d", v.finishedNodes(), v.Total), ago(v.CreatedAt, now))
	}
	t.write(m.Stdout)
	return nil
}
