package main

import (
	"context"
	"fmt"
	"time"
)

// queueDescription is a queue in full: its counts and its limits.
type queueDescription struct {
	queueJSON
	Limits limitsJSON `json:"limits"`
}

// limitsJSON is queue.Limits; 0 is no limit.
type limitsJSON struct {
	Concurrency      int   `json:"concurrency,omitempty"`
	Rate             int   `json:"rate,omitempty"`
	PerMS            int64 `json:"per_ms,omitempty"`
	GroupConcurrency int   `json:"group_concurrency,omitempty"`
	GroupRate        int   `json:"group_rate,omitempty"`
	MaxDepth         int   `json:"max_depth,omitempty"`
	GroupMaxDepth    int   `json:"group_max_depth,omitempty"`
	// Running counts the tasks the concurrency limit counts now.
	Running int64 `json:"running"`
}

// describeQueue shows a queue's counts and limits.
func describeQueue(ctx context.Context, m *Main, s *session, _, name string, asJSON bool) error {
	if err := checkQueueName(name); err != nil {
		return usageErr("%v", err)
	}
	qi, err := s.insp.QueueInfo(ctx, name)
	if err != nil {
		return s.explain(ctx, err, name)
	}
	li, err := s.insp.LimitInfo(ctx, name)
	if err != nil {
		return err
	}
	l := li.Limits
	d := queueDescription{queueJSON: newQueueJSON(qi), Limits: limitsJSON{Concurrency: l.Concurrency, Rate: l.Rate,
		PerMS: l.Per.Milliseconds(), GroupConcurrency: l.GroupConcurrency, GroupRate: l.GroupRate,
		MaxDepth: l.MaxDepth, GroupMaxDepth: l.GroupMaxDepth, Running: li.Running}}
	if asJSON {
		return writeJSON(m.Stdout, d)
	}
	var f fields
	f.add("Queue", qi.Queue)
	f.add("Partitions", itoa(int64(qi.Partitions)))
	f.add("Paused", yesNo(qi.Paused))
	for _, c := range []struct {
		name string
		n    int64
	}{{"Pending", qi.Pending}, {"Active", qi.Active}, {"Scheduled", qi.Scheduled}, {"Retry", qi.Retry},
		{"Dead", qi.Dead}, {"Succeeded", qi.Succeeded}, {"Waiting", qi.Waiting}, {"Groups", qi.ActiveGroups}} {
		f.add(c.name, itoa(c.n))
	}
	f.add("Latency", latency(qi.Latency))
	per := max(l.Per, time.Second)
	f.add("Concurrency", limit(l.Concurrency, ""))
	f.add("Rate", limit(l.Rate, " per "+per.String()))
	f.add("Max depth", limit(l.MaxDepth, ""))
	f.add("Group concurrency", limit(l.GroupConcurrency, ""))
	f.add("Group rate", limit(l.GroupRate, " per "+per.String()))
	f.add("Group max depth", limit(l.GroupMaxDepth, ""))
	f.write(m.Stdout)
	return nil
}

// limit renders a limit, "-" for none.
func limit(n int, unit string) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%s", n, unit)
}
