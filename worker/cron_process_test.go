package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// cronTickIDs returns the ticks (unix seconds) enqueued onto q, from the
// recent feed: the task IDs are cron:tick:<unix seconds>. None before
// the first tick.
func cronTickIDs(t *testing.T, rdb *redis.Client, prefix, q string) []int64 {
	t.Helper()
	insp, err := queue.NewInspector(rdb, queue.Config{Prefix: prefix})
	must(t, err)
	page, err := insp.ListTasks(context.Background(), queue.TaskQuery{Queue: q, Limit: 1000})
	if errors.Is(err, queue.ErrNotFound) {
		return nil // no tick yet: the first registers the queue
	}
	must(t, err)
	var ticks []int64
	for _, ti := range page.Tasks {
		var sec int64
		if _, err := fmt.Sscan(ti.ID[strings.LastIndex(ti.ID, ":")+1:], &sec); err != nil {
			t.Fatalf("task %s is not a tick", ti.ID)
		}
		ticks = append(ticks, sec)
	}
	return ticks
}

// TestCronAcrossProcesses: @every 1s on three processes until five ticks
// were enqueued: none twice. Two are servers with a handler, the third a
// server that only schedules (no handler, no queue). It waits for the
// ticks, not for a span of time: on a loaded machine all three may be
// late for a tick.
func TestCronAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	opts := childOpts{Addr: srv.Addr, Prefix: prefix, Queue: "jobs", Lease: 2 * time.Second,
		Heartbeat: 400 * time.Millisecond, Handler: handleRecord, Schedule: "@every 1s|skip"}
	var kids []*child
	for i := range 3 {
		o := opts
		if i == 2 {
			o.Handler = handleNone
		}
		kids = append(kids, startChild(t, fmt.Sprint("s", i), o))
	}
	for _, c := range kids {
		c.waitReady(t, rdb)
	}
	waitFor(t, time.Minute, "five ticks enqueued", func() bool {
		return len(cronTickIDs(t, rdb, prefix, "jobs-cron")) >= 5
	})
	for _, c := range kids {
		c.stop(t)
	}
	ticks := cronTickIDs(t, rdb, prefix, "jobs-cron")
	seen := map[int64]bool{}
	for _, s := range ticks {
		if seen[s] {
			t.Fatalf("tick %d enqueued twice", s)
		}
		seen[s] = true
	}
	for _, s := range ticks {
		if s <= 0 {
			t.Fatalf("tick %d is not a time: %v", s, ticks)
		}
	}
}

// TestCronProcessStoppedThreeTicks: a lone scheduler process stopped
// (SIGSTOP) across three ticks and resumed follows its missed-tick policy:
// skip enqueues none of them, run-once enqueues one.
func TestCronProcessStoppedThreeTicks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy string
		want   int
	}{{"skip", 0}, {"run-once", 1}} {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := srv.Client(t)
			prefix := redistest.Prefix(t)
			kid := startChild(t, "sched", childOpts{Addr: srv.Addr, Prefix: prefix, Queue: "jobs", Lease: 10 * time.Second,
				Heartbeat: 2 * time.Second, Handler: handleRecord, Schedule: "@every 1s|" + c.policy})
			kid.waitReady(t, rdb)
			time.Sleep(1500 * time.Millisecond)
			kid.signal(t, syscall.SIGSTOP)
			stopped := time.Now()
			time.Sleep(3300 * time.Millisecond)
			kid.signal(t, syscall.SIGCONT)
			resumed := time.Now()
			// The resumed scheduler enqueues the tick that is on time (and,
			// with run-once, one missed tick first): wait until it has, so a
			// slow wake-up under load is not mistaken for a skip.
			waitFor(t, 10*time.Second, "the scheduler's first tick after resuming", func() bool {
				for _, s := range cronTickIDs(t, rdb, prefix, "jobs-cron") {
					if !time.Unix(s, 0).Before(resumed.Add(-tickGrace)) {
						return true
					}
				}
				return false
			})
			kid.stop(t)
			var missed []int64
			for _, s := range cronTickIDs(t, rdb, prefix, "jobs-cron") {
				at := time.Unix(s, 0)
				// ticks while stopped, older than the on-time grace at resume
				if at.After(stopped) && at.Before(resumed.Add(-tickGrace)) {
					missed = append(missed, s)
				}
			}
			if len(missed) != c.want {
				t.Fatalf("policy %s: %d enqueues for the ticks missed while stopped (%v), want %d", c.policy, len(missed), missed, c.want)
			}
		})
	}
}
