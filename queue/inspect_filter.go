package queue

import (
	"cmp"
	"context"
	"strings"

	"github.com/shardq/shardq/internal/inspect"
)

// maxSearchScan is how many tasks one Search call reads at most.
const maxSearchScan = inspect.MaxSearchScan

// filtered reads q.State's tasks newest first (pending: from the head),
// in pages of at most 500 (two round trips each), and keeps those every
// filter matches, until Limit matches or Scan tasks were read. It never
// scans the keyspace: it reads the ranked feeds and state sets ListTasks
// pages, so how far back it reaches is what they keep: the recent feed
// holds the newest Config.FeedSize tasks per partition, dead and
// succeeded what their caps and retention keep.
func (i *Inspector) filtered(ctx context.Context, q TaskQuery) (*TaskPage, error) {
	limit := min(cmp.Or(max(q.Limit, 0), defaultPageSize), maxPageSize) // none or below 0: the default
	scan := q.Scan
	if scan <= 0 || scan > maxSearchScan {
		scan = maxSearchScan
	}
	errText := strings.ToLower(q.Error)
	match := func(ti *TaskInfo) bool {
		switch {
		case q.Type != "" && !strings.HasSuffix(q.Type, "*") && ti.Type != q.Type:
			return false
		case strings.HasSuffix(q.Type, "*") && !strings.HasPrefix(ti.Type, strings.TrimSuffix(q.Type, "*")):
			return false
		case q.IDPrefix != "" && !strings.HasPrefix(ti.ID, q.IDPrefix), q.Group != "" && ti.Group != q.Group:
			return false
		case errText != "" && !strings.Contains(strings.ToLower(ti.LastError), errText):
			return false
		}
		return true
	}
	res := &TaskPage{}
	after := q.After
	for res.Scanned < scan && len(res.Tasks) < limit {
		want := min(500, scan-res.Scanned)
		page, err := i.listTasks(ctx, TaskQuery{Queue: q.Queue, State: q.State, After: after,
			Limit: want, Newest: q.State != StatePending})
		if err != nil {
			return nil, err
		}
		for j, ti := range page.Tasks {
			res.Scanned++
			if !match(ti) {
				continue
			}
			res.Tasks = append(res.Tasks, ti)
			if len(res.Tasks) == limit && j < len(page.Tasks)-1 {
				// stop at this task: the next call starts after it
				return i.resumeAt(ctx, q, after, j+1, res)
			}
		}
		if len(page.Tasks) < want {
			res.Next = "" // the end: nothing further back
			return res, nil
		}
		after = page.Next
		res.Next = after
	}
	return res, nil
}

// resumeAt sets res.Next to the marker after the first n tasks read after
// `after`, so a search stopped in the middle of a page goes on from there.
func (i *Inspector) resumeAt(ctx context.Context, q TaskQuery, after string, n int, res *TaskPage) (*TaskPage, error) {
	page, err := i.listTasks(ctx, TaskQuery{Queue: q.Queue, State: q.State, After: after, Limit: n, Newest: q.State != StatePending})
	if err != nil {
		return nil, err
	}
	res.Next = page.Next
	return res, nil
}
