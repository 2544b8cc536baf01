package queue

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardq/shardq/internal/inspect"
)

// SearchQuery finds tasks of one queue and state by type, error text or
// ID prefix. Every filter given must match. Search never looks inside
// payloads; an error encrypted with Config.EncryptErrors matches only when
// the Inspector has the KeyRing.
type SearchQuery struct {
	Queue string
	// State is where to look: empty for every task enqueued lately (the
	// default), StateDead, StateRetry, StateSucceeded, StateScheduled,
	// StateActive or StatePending.
	State State
	// Type matches a task type exactly, or by prefix when it ends in "*"
	// ("email:*").
	Type string
	// Error matches a substring of the last error, without regard to
	// case (dead and retrying tasks have one).
	Error string
	// IDPrefix matches the start of the task ID.
	IDPrefix string
	// After continues a search: the Next of the previous result.
	After string
	// Limit bounds the matches returned (default 50, at most 1,000).
	Limit int
	// Scan bounds how many tasks one call reads (default and at most
	// 2,000): the cost of a search is bounded whatever the
	// queue's size, and Next goes on further back.
	Scan int
}

// maxSearchScan is how many tasks one Search call reads at most.
const maxSearchScan = inspect.MaxSearchScan

// SearchResult is one call's matches.
type SearchResult struct {
	Tasks []*TaskInfo
	// Scanned is how many tasks this call read, and Next the marker to go
	// on from ("" when the state was read to its end: nothing is left).
	Scanned int
	Next    string
}

// Search reads q.State's tasks newest first (pending: from the head), in
// pages of at most 500 (two round trips each), and keeps those every
// filter matches, until Limit matches or Scan tasks were read. It never
// scans the keyspace: it reads the ranked feeds and state sets the
// dashboard pages, so how far back it reaches is what they keep: the
// recent feed holds the newest Config.FeedSize tasks per partition, dead
// and done what their caps and retention keep.
func (i *Inspector) Search(ctx context.Context, q SearchQuery) (*SearchResult, error) {
	if q.State == "" {
		q.State = stateRecent
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	scan := q.Scan
	if scan <= 0 || scan > maxSearchScan {
		scan = maxSearchScan
	}
	if q.Type == "" && q.Error == "" && q.IDPrefix == "" {
		return nil, fmt.Errorf("%w: search with no filter: give a type, error text or ID prefix", errInvalidOption)
	}
	errText := strings.ToLower(q.Error)
	match := func(ti *TaskInfo) bool {
		switch {
		case q.Type != "" && !strings.HasSuffix(q.Type, "*") && ti.Type != q.Type:
			return false
		case strings.HasSuffix(q.Type, "*") && !strings.HasPrefix(ti.Type, strings.TrimSuffix(q.Type, "*")):
			return false
		case q.IDPrefix != "" && !strings.HasPrefix(ti.ID, q.IDPrefix):
			return false
		case errText != "" && !strings.Contains(strings.ToLower(ti.LastError), errText):
			return false
		}
		return true
	}
	res := &SearchResult{}
	after := q.After
	for res.Scanned < scan && len(res.Tasks) < limit {
		want := min(500, scan-res.Scanned)
		page, err := i.ListTasks(ctx, TaskQuery{Queue: q.Queue, State: q.State, After: after,
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
func (i *Inspector) resumeAt(ctx context.Context, q SearchQuery, after string, n int, res *SearchResult) (*SearchResult, error) {
	page, err := i.ListTasks(ctx, TaskQuery{Queue: q.Queue, State: q.State, After: after, Limit: n, Newest: q.State != StatePending})
	if err != nil {
		return nil, err
	}
	res.Next = page.Next
	return res, nil
}
