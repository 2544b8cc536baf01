package dashboard

import (
	"context"
	"sort"
	"time"

	"github.com/shardq/shardq/queue"
)

// schedules returns what schedulers registered in Redis
// (queue.Inspector.Schedules).
func (d *server) schedules(ctx context.Context) ([]scheduleRow, error) {
	infos, err := d.insp.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]scheduleRow, 0, len(infos))
	for _, s := range infos {
		out = append(out, scheduleRow{Name: s.Name, Spec: s.Spec, Queue: s.Queue, Type: s.Type,
			Missed: s.Missed, LastRun: s.LastRun, NextRun: s.NextRun})
	}
	return out, nil
}

// limits returns the limits stored for a page of queues by name: at most
// n queues named after after (queue.Inspector.LimitInfo), a row per limit
// set and one per group running or waiting, and the last queue
// of the page when more follow. It reads each queue's limits, a few round
// trips per queue, so a page bounds the cost whatever the number of
// queues.
func (d *server) limits(ctx context.Context, after string, n int) ([]limitRow, string, error) {
	names, err := d.insp.Queues(ctx)
	if err != nil {
		return nil, "", err
	}
	page, _, _, next := pageOf(names, "", after, n)
	var out []limitRow
	for _, q := range page {
		li, err := d.insp.LimitInfo(ctx, q)
		if err != nil {
			return nil, "", err
		}
		out = append(out, limitRows(li)...)
	}
	return out, next, nil
}

// limitRows turns a queue's limits into rows of the limits page.
func limitRows(li *queue.LimitInfo) []limitRow {
	var out []limitRow
	l := li.Limits
	if l.Concurrency > 0 {
		out = append(out, limitRow{Name: li.Queue, Queue: li.Queue, Kind: "concurrency", Max: int64(l.Concurrency),
			Running: li.Running})
	}
	if l.Rate > 0 {
		out = append(out, limitRow{Name: li.Queue, Queue: li.Queue, Kind: "rate", Max: int64(l.Rate),
			Per: max(l.Per, time.Second), Running: li.Started})
	}
	if l.MaxDepth > 0 {
		out = append(out, limitRow{Name: li.Queue, Queue: li.Queue, Kind: "depth", Max: int64(l.MaxDepth), Waiting: li.Depth})
	}
	if l.GroupMaxDepth > 0 {
		out = append(out, limitRow{Name: li.Queue + " (every group)", Queue: li.Queue, Kind: "group depth", Max: int64(l.GroupMaxDepth)})
	}
	if l.GroupRate > 0 {
		out = append(out, limitRow{Name: li.Queue + " (every group)", Queue: li.Queue, Kind: "group rate", Max: int64(l.GroupRate),
			Per: max(l.Per, time.Second)})
	}
	if l.GroupConcurrency > 0 {
		groups := make([]string, 0, len(li.Groups))
		for g := range li.Groups {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		out = append(out, limitRow{Name: li.Queue + " (every group)", Queue: li.Queue, Kind: "group",
			Max: int64(l.GroupConcurrency), Waiting: li.Waiting})
		for _, g := range groups {
			gi := li.Groups[g]
			out = append(out, limitRow{Name: g, Queue: li.Queue, Kind: "group", Max: int64(l.GroupConcurrency),
				Running: gi.Running, Waiting: gi.Waiting})
		}
	}
	return out
}
