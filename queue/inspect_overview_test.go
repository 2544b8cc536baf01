package queue_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardq/shardq/queue"
)

// TestListQueues: pages of queues by name cover every queue once, a
// prefix narrows them, and a page's Redis commands are bounded by its
// size, not by the number of queues.
func TestListQueues(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	var want []string
	for j := range 120 {
		name := fmt.Sprintf("q%03d", j)
		want = append(want, name)
		b.enqueue(t, 1+j%3, "t", queue.In(name))
	}
	b.enqueue(t, 2, "t", queue.In("other"))
	want = append(want, "other")

	// a cold script cache costs the first call a load: not what is measured
	if _, err := b.insp.ListQueues(b.ctx, queue.QueueQuery{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var pending int64
	after := ""
	for pages := 0; ; pages++ {
		b.calls.commands.Store(0)
		b.calls.roundTrips.Store(0)
		p, err := b.insp.ListQueues(b.ctx, queue.QueueQuery{After: after, Limit: 50, History: queue.SpanHour})
		if err != nil {
			t.Fatal(err)
		}
		// the registry (two commands), one counts call and one history MGET per queue
		if c, rt := b.calls.commands.Load(), b.calls.roundTrips.Load(); c > 2+2*50 || rt != 3 {
			t.Fatalf("page %d: %d commands in %d round trips, want <= %d in 3", pages, c, rt, 2+2*50)
		}
		if p.Matched != 121 || p.Offset != len(seen) || p.History == nil || len(p.History.Points) != 60 {
			t.Fatalf("page %d: matched %d, offset %d (want 121, %d), history %v", pages, p.Matched, p.Offset, len(seen), p.History)
		}
		for _, qi := range p.Queues {
			seen = append(seen, qi.Queue)
			pending += qi.Pending
		}
		if p.Next == "" {
			break
		}
		if pages > 3 || p.Next != seen[len(seen)-1] {
			t.Fatalf("page %d: next %q after %q", pages, p.Next, seen[len(seen)-1])
		}
		after = p.Next
	}
	if fmt.Sprint(seen) != fmt.Sprint(append(want[120:], want[:120]...)) || pending != 2+120+120 {
		t.Fatalf("paged %d queues, %d pending: %v", len(seen), pending, seen)
	}

	p, err := b.insp.ListQueues(b.ctx, queue.QueueQuery{Prefix: "q11"})
	if err != nil || p.Matched != 10 || len(p.Queues) != 10 || p.Queues[0].Queue != "q110" || p.Next != "" || p.History != nil {
		t.Fatalf("prefix q11: %+v %v", p, err)
	}
	if p, err := b.insp.ListQueues(b.ctx, queue.QueueQuery{After: "zzz"}); err != nil || len(p.Queues) != 0 || p.Next != "" || p.Offset != 121 {
		t.Fatalf("after the last: %+v %v", p, err)
	}
	for _, q := range []queue.QueueQuery{{Limit: -1}, {Limit: queue.MaxPageSize + 1}, {History: "week"}} {
		if _, err := b.insp.ListQueues(b.ctx, q); !errors.Is(err, queue.ErrInvalidOption) {
			t.Errorf("%+v: %v, want ErrInvalidOption", q, err)
		}
	}
}
