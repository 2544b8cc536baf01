package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{Partitions: map[string]int{"a": 2}})
	b.enqueue(t, 1, typeOK, queue.In("a"))
	b.enqueue(t, 1, typeOK, queue.In("b"))
	now := time.Now()
	minute := now.Unix() / 60
	count := func(q string, part int, kind string, ago time.Duration, n int64) {
		must(t, b.rdb.IncrBy(b.ctx, keys.For(b.cfg.Prefix, q, part).Stats(kind, minute-int64(ago/time.Minute)), n).Err())
	}
	count("a", 0, "done", 0, 5)
	count("a", 1, "done", 0, 1)
	count("a", 0, "failed", 0, 2)
	count("a", 1, "done", 3*time.Minute, 7)
	count("a", 0, "done", 90*time.Minute, 11)
	count("a", 1, "failed", 90*time.Minute, 1)
	count("a", 0, "done", 30*time.Hour, 100) // too old for either span
	count("b", 0, "done", 0, 4)

	at := func(h *queue.History, ago time.Duration) queue.HistoryPoint {
		t.Helper()
		ts := now.Add(-ago)
		for _, p := range h.Points {
			if !ts.Before(p.Start) && ts.Before(p.Start.Add(h.Step)) {
				return p
			}
		}
		t.Fatalf("no point of %v holds %v", h.Span, ts)
		return queue.HistoryPoint{}
	}

	b.calls.reset()
	hour, err := b.insp.History(b.ctx, time.Hour, "a")
	must(t, err)
	if rt := b.calls.roundTrips.Load(); rt != 2 {
		t.Fatalf("History took %d round trips, want 2", rt)
	}
	if len(hour.Points) != 60 || hour.Step != time.Minute || hour.Queue != "a" {
		t.Fatalf("hour: %d points of %v", len(hour.Points), hour.Step)
	}
	if p := at(hour, 0); p.Succeeded != 6 || p.Failed != 2 || p.Succeeded+p.Failed != 8 {
		t.Fatalf("this minute: %+v", p)
	}
	if p := at(hour, 3*time.Minute); p.Succeeded != 7 {
		t.Fatalf("three minutes ago: %+v", p)
	}
	if tot := totals(hour); tot.Succeeded != 13 || tot.Failed != 2 {
		t.Fatalf("hour totals %+v", tot)
	}

	day, err := b.insp.History(b.ctx, 24*time.Hour, "a")
	must(t, err)
	if len(day.Points) != 24 || day.Step != time.Hour || day.Points[23].Start.After(now) || now.Sub(day.Points[23].Start) >= time.Hour {
		t.Fatalf("day: %d points of %v, last at %v", len(day.Points), day.Step, day.Points[23].Start)
	}
	if p := at(day, 90*time.Minute); p.Succeeded < 11 || p.Failed < 1 {
		t.Fatalf("90 minutes ago: %+v", p)
	}
	if tot := totals(day); tot.Succeeded != 24 || tot.Failed != 3 {
		t.Fatalf("day totals %+v", tot)
	}

	all, err := b.insp.History(b.ctx, time.Hour)
	must(t, err)
	if tot := totals(all); all.Queue != "" || tot.Succeeded != 17 || tot.Failed != 2 {
		t.Fatalf("every queue: %+v", tot)
	}
	if _, err := b.insp.History(b.ctx, 7*24*time.Hour, "a"); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("bad span: err = %v", err)
	}
}

// TestHistoryCountsWorkerOutcomes: what a worker writes is what History reads.
func TestHistoryCountsWorkerOutcomes(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	b.worker(t, "w")
	b.enqueue(t, 3, typeOK, queue.In("w"))
	b.enqueue(t, 2, typeDie, queue.In("w"))
	b.waitCounts(t, "w", "dead", func(qi *queue.QueueInfo) bool { return qi.Dead == 2 && qi.Pending == 0 && qi.Active == 0 })
	h, err := b.insp.History(b.ctx, time.Hour, "w")
	must(t, err)
	if tot := totals(h); tot.Succeeded != 3 || tot.Failed != 2 {
		t.Fatalf("totals %+v", tot)
	}
}

// totals returns the sums over every point.
func totals(h *queue.History) queue.HistoryPoint {
	var t queue.HistoryPoint
	for _, p := range h.Points {
		t.Succeeded += p.Succeeded
		t.Failed += p.Failed
	}
	if len(h.Points) > 0 {
		t.Start = h.Points[0].Start
	}
	return t
}
