package queue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// QueueInfos returns the QueueInfo of every queue, sorted by name, in two
// round trips whatever the number of queues and partitions: the registry,
// then one pipeline of every partition's counts. On Redis Cluster that
// pipeline is one round trip per master, sent to all masters at once
// (go-redis splits a pipeline by node), not one per partition. Its Redis
// commands grow with the number of queues: ListQueues reads a page.
func (i *Inspector) QueueInfos(ctx context.Context) ([]*QueueInfo, error) {
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(reg))
	for q := range reg {
		names = append(names, q)
	}
	sort.Strings(names)
	return i.queueInfos(ctx, reg, names)
}

// QueueQuery selects a page of queues for ListQueues.
type QueueQuery struct {
	// Prefix keeps the queues whose names start with it. "" keeps every
	// queue.
	Prefix string
	// After is the Next of the previous page: the page starts at the
	// first queue named after it. "" starts at the first queue.
	After string
	// Limit bounds the page. Defaults to 50, at most MaxPageSize.
	Limit int
	// History, when set, also reads the history of the page's queues over
	// this span, summed, into QueuePage.History.
	History Span
}

// QueuePage is a page of queues, sorted by name.
type QueuePage struct {
	Queues []*QueueInfo
	// Next is the After of the following page, "" on the last.
	Next string
	// Matched counts the queues whose names start with the query's
	// Prefix, and Offset those of them named before this page.
	Matched int
	Offset  int
	// History sums the page's queues' history when QueueQuery.History is
	// set, else it is nil.
	History *History
}

// ListQueues returns a page of queues with their counts. A page's Redis
// commands are bounded by its Limit, not by the number of queues: the
// registry (one round trip, whose reply holds every queue's name), then
// one pipeline of the page's counts, and one of its history when asked.
// Paging by name never skips a queue that exists through the pages; a
// queue added meanwhile shows up if its name sorts after the page read.
func (i *Inspector) ListQueues(ctx context.Context, q QueueQuery) (*QueuePage, error) {
	if q.Limit == 0 {
		q.Limit = defaultPageSize
	}
	if q.Limit < 0 || q.Limit > MaxPageSize {
		return nil, fmt.Errorf("%w: Limit %d, want 1..%d", ErrInvalidOption, q.Limit, MaxPageSize)
	}
	if q.History != "" && q.History != SpanHour && q.History != SpanDay {
		return nil, fmt.Errorf("%w: span %q, want hour or day", ErrInvalidOption, q.History)
	}
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range reg {
		if strings.HasPrefix(name, q.Prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	start := sort.Search(len(names), func(j int) bool { return names[j] > q.After })
	if q.After == "" {
		start = 0
	}
	end := min(start+q.Limit, len(names))
	page := &QueuePage{Matched: len(names), Offset: start}
	if end < len(names) {
		page.Next = names[end-1]
	}
	if page.Queues, err = i.queueInfos(ctx, reg, names[start:end]); err != nil {
		return nil, err
	}
	if q.History != "" {
		parts := make(map[string]int, end-start)
		for _, qi := range page.Queues {
			parts[qi.Queue] = qi.Partitions
		}
		if page.History, err = i.history(ctx, parts, q.History); err != nil {
			return nil, fmt.Errorf("history of a page of queues: %w", err)
		}
	}
	return page, nil
}

// queueInfos reads the counts of names, whose partitions reg holds, in
// one pipeline.
func (i *Inspector) queueInfos(ctx context.Context, reg map[string]int, names []string) ([]*QueueInfo, error) {
	out := make([]*QueueInfo, len(names))
	cmds := make([][]*redis.Cmd, len(names))
	err := rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for j, q := range names {
				n := max(reg[q], i.cfg.partitions(q))
				out[j] = &QueueInfo{Queue: q, Partitions: n}
				cmds[j] = make([]*redis.Cmd, n)
				for part := range n {
					k := keys.For(i.cfg.Prefix, q, part)
					cmds[j][part] = p.Run(ctx, script.Counts, countKeys(k), countArgs(k)...)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("queue infos: %w", err)
	}
	now := time.Now()
	for j, info := range out {
		for _, cmd := range cmds[j] {
			if err := info.add(cmd, now); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
