package main

import (
	"context"

	"github.com/shardq/shardq/queue"
)

// maxBulkScan bounds how many tasks a query that filters by group alone
// reads (queue.TaskQuery has no group filter: every task is read).
const maxBulkScan = 200_000

// countOf is how many tasks of qi are in state.
func countOf(qi *queue.QueueInfo, state queue.State) int64 {
	switch state {
	case queue.StatePending:
		return qi.Pending
	case queue.StateScheduled:
		return qi.Scheduled
	case queue.StateRetry:
		return qi.Retry
	case queue.StateDead:
		return qi.Dead
	case queue.StateSucceeded:
		return qi.Succeeded
	}
	return qi.Active
}

// matching reads the IDs of the tasks the flags select, at most f.max,
// and whether more match: the dashboard's search (ListTasks with
// filters), a page after another, and the group kept here.
func matching(ctx context.Context, insp *queue.Inspector, f *actFlags) ([]string, bool, error) {
	q := queue.TaskQuery{Queue: f.queue, State: queue.State(f.state), Type: f.typ, Error: f.errText,
		IDPrefix: f.idPrefix, Limit: 1000}
	searching := q.Type != "" || q.Error != "" || q.IDPrefix != ""
	var ids []string
	scanned := 0
	for {
		page, err := insp.ListTasks(ctx, q)
		if err != nil {
			return nil, false, err
		}
		scanned += max(page.Scanned, len(page.Tasks))
		for _, ti := range page.Tasks {
			if f.group != "" && ti.Group != f.group {
				continue
			}
			if len(ids) == f.max {
				return ids, true, nil
			}
			ids = append(ids, ti.ID)
		}
		end := page.Next == "" || (!searching && len(page.Tasks) < q.Limit)
		if end {
			return ids, false, nil
		}
		if !searching && scanned >= maxBulkScan {
			return ids, true, nil
		}
		q.After = page.Next
	}
}
