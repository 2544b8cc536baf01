package dashboard

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// queueQuery asks for a page of queues: at most limit of those whose
// names start with prefix, by name, after the name after; with the
// summed history of the page's queues over span, when span is set.
type queueQuery struct {
	prefix, after string
	limit         int
	span          time.Duration
}

// queueQuery reads a page of queues from the request: prefix, after and
// limit (1..inspect.MaxPageSize, PageSize when unset).
func (d *server) queueQuery(r *http.Request) (queueQuery, error) {
	v := r.URL.Query()
	q := queueQuery{prefix: strings.TrimSpace(v.Get("prefix")), after: v.Get("after")}
	var err error
	q.limit, err = limitParam(v.Get("limit"), d.opts.PageSize)
	return q, err
}

// queueList is a page of queues by name.
type queueList struct {
	Queues  []*queue.QueueInfo
	Matched int    // the queues whose names start with the prefix
	Offset  int    // of the page's first queue among those
	Next    string // the page's last name when more follow, else ""
	History *queue.History
}

// listQueues reads the page q asks for: every name, then the counts and
// history of the page's queues alone, so its Redis commands are bounded
// by the page, whatever the number of queues.
func (d *server) listQueues(ctx context.Context, q queueQuery) (*queueList, error) {
	all, err := d.insp.Queues(ctx) // sorted
	if err != nil {
		return nil, err
	}
	page, matched, offset, next := pageOf(all, q.prefix, q.after, q.limit)
	p := &queueList{Matched: matched, Offset: offset, Next: next}
	if len(page) == 0 {
		p.History = &queue.History{Span: q.span} // none named would sum every queue
		return p, nil
	}
	if p.Queues, err = d.insp.QueueInfos(ctx, page...); err != nil {
		return nil, err
	}
	if q.span != 0 {
		p.History, err = d.insp.History(ctx, q.span, page...)
	}
	return p, err
}

// pageOf pages sorted names: at most limit of those that start with
// prefix, after the name after; how many start with prefix, where the
// page starts among them, and its last name when more follow.
func pageOf(names []string, prefix, after string, limit int) (page []string, matched, offset int, next string) {
	var match []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			match = append(match, n)
		}
	}
	if after != "" {
		offset = sort.SearchStrings(match, after)
		if offset < len(match) && match[offset] == after {
			offset++
		}
	}
	end := min(offset+limit, len(match))
	if end < len(match) {
		next = match[end-1]
	}
	return match[offset:end], len(match), offset, next
}
