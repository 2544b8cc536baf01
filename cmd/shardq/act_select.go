package main

import (
	"context"

	"github.com/shardq/shardq/queue"
)

// maxBulkScan bounds how many tasks one selection reads: a filter that
// matches few tasks of a large state reads every one.
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
// filters), a page after another.
func matching(ctx context.Context, insp *queue.Inspector, f *actFlags) ([]string, bool, error) {
	q := queue.TaskQuery{Queue: f.queue, State: queue.State(f.state), Type: f.typ, Error: f.errText,
		IDPrefix: f.idPrefix, Group: f.group, Limit: 1000}
	searching := q.Type != "" || q.Error != "" || q.IDPrefix != "" || q.Group != ""
	var ids []string
	scanned := 0
	for {
		page, err := insp.ListTasks(ctx, q)
		if err != nil {
			return nil, false, err
		}
		scanned += max(page.Scanned, len(page.Tasks))
		for _, ti := range page.Tasks {
			if len(ids) == f.max {
				return ids, true, nil
			}
			ids = append(ids, ti.ID)
		}
		end := page.Next == "" || (!searching && len(page.Tasks) < q.Limit)
		if end {
			return ids, false, nil
		}
		if scanned >= maxBulkScan {
			return ids, true, nil
		}
		q.After = page.Next
	}
}
