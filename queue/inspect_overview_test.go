package queue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestQueueInfosNamed: QueueInfos and History of named queues read those
// queues alone, so a page of them costs Redis commands bounded by its
// size, not by the number of queues; named queues come in their order,
// and an unknown one is ErrNotFound.
func TestQueueInfosNamed(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	var names []string
	for j := range 120 {
		name := fmt.Sprintf("q%03d", j)
		names = append(names, name)
		b.enqueue(t, 1+j%3, "t", queue.In(name))
	}
	b.enqueue(t, 2, "t", queue.In("other"))

	// a cold script cache costs the first call a load: not what is measured
	if _, err := b.insp.QueueInfos(b.ctx, "other"); err != nil {
		t.Fatal(err)
	}
	var pending int64
	for start := 0; start < len(names); start += 50 {
		page := names[start:min(start+50, len(names))]
		b.calls.commands.Store(0)
		b.calls.roundTrips.Store(0)
		infos, err := b.insp.QueueInfos(b.ctx, page...)
		if err != nil {
			t.Fatal(err)
		}
		// the registry's two HMGETs, then one counts call per queue
		if c, rt := b.calls.commands.Load(), b.calls.roundTrips.Load(); c > int64(2+len(page)) || rt != 2 {
			t.Fatalf("QueueInfos of %d queues: %d commands in %d round trips, want <= %d in 2", len(page), c, rt, 2+len(page))
		}
		for j, qi := range infos {
			if qi.Queue != page[j] {
				t.Fatalf("QueueInfos[%d] = %q, want %q", j, qi.Queue, page[j])
			}
			pending += qi.Pending
		}
		b.calls.commands.Store(0)
		b.calls.roundTrips.Store(0)
		h, err := b.insp.History(b.ctx, time.Hour, page...)
		if err != nil || len(h.Points) != 60 || h.Queue != "" {
			t.Fatalf("History of %d queues: %+v, %v", len(page), h, err)
		}
		// the registry's two HMGETs, then one MGET per queue
		if c, rt := b.calls.commands.Load(), b.calls.roundTrips.Load(); c > int64(2+len(page)) || rt != 2 {
			t.Fatalf("History of %d queues: %d commands in %d round trips, want <= %d in 2", len(page), c, rt, 2+len(page))
		}
	}
	if pending != 120+120 {
		t.Fatalf("%d pending over the named queues, want 240", pending)
	}
	all, err := b.insp.QueueInfos(b.ctx)
	if err != nil || len(all) != 121 || all[0].Queue != "other" {
		t.Fatalf("QueueInfos of every queue: %d, %v", len(all), err)
	}
	if _, err := b.insp.QueueInfos(b.ctx, "q001", "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("QueueInfos of an unknown queue: %v, want ErrNotFound", err)
	}
	if _, err := b.insp.History(b.ctx, time.Hour, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("History of an unknown queue: %v, want ErrNotFound", err)
	}
	if _, err := b.insp.History(b.ctx, 7*24*time.Hour, "q001"); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("History over a week: %v, want ErrInvalid", err)
	}
}
