package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// byQueue is a handler that counts the tasks it ran per queue, in order.
type byQueue struct {
	mu    sync.Mutex
	order []string
	sleep time.Duration
}

func (h *byQueue) ProcessTask(_ context.Context, t *Task) error {
	h.mu.Lock()
	h.order = append(h.order, t.Queue)
	h.mu.Unlock()
	time.Sleep(h.sleep)
	return nil
}

func (h *byQueue) ran() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.order...)
}

func (h *byQueue) count(q string) int {
	n := 0
	for _, x := range h.ran() {
		if x == q {
			n++
		}
	}
	return n
}

func TestQueuePatterns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("QueuesCreatedWhileRunningArePickedUp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &byQueue{}
		s := b.server(t, Config{QueuePatterns: map[string]int{"tenant:*": 1}, QueueRefresh: 100 * time.Millisecond, Lease: 3 * time.Second}, h)
		for _, q := range []string{"tenant:a", "tenant:b", "other"} {
			for i := range 5 {
				b.enqueue(t, queue.NewRawTask("t", []byte(fmt.Sprint(i))), queue.In(q))
			}
		}
		waitFor(t, 20*time.Second, "the tenant queues' tasks run", func() bool {
			return h.count("tenant:a") == 5 && h.count("tenant:b") == 5
		})
		// a queue created later still is
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In("tenant:c"))
		waitFor(t, 20*time.Second, "tenant:c's task run", func() bool { return h.count("tenant:c") == 1 })
		if n := h.count("other"); n != 0 {
			t.Fatalf("ran %d tasks of a queue no pattern matches", n)
		}
		got := s.engine.Queues()
		if len(got) != 3 || got["tenant:a"] != 1 || got["tenant:c"] != 1 {
			t.Fatalf("served %v, want the three tenant queues at weight 1", got)
		}
		// the status workers publish names them (DeleteQueue, Scaling)
		waitFor(t, 20*time.Second, "the status to name tenant:c", func() bool {
			ws, err := b.insp.Workers(ctx)
			if err != nil || len(ws) != 1 {
				return false
			}
			_, ok := ws[0].Queues["tenant:c"]
			return ok
		})
	})

	t.Run("MatchedQueuesShareSlotsFairly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		queues := []string{"tenant:a", "tenant:b", "tenant:c"}
		const each = 150
		for _, q := range queues {
			tasks := make([]*queue.Task, each)
			for i := range tasks {
				tasks[i] = queue.NewRawTask("t", []byte(fmt.Sprint(i)), queue.In(q))
			}
			_, err := b.client.EnqueueMany(ctx, tasks)
			must(t, err)
		}
		h := &byQueue{sleep: 2 * time.Millisecond}
		b.server(t, Config{QueuePatterns: map[string]int{"tenant:*": 2}, Concurrency: 3, FetchSize: 1, QueueRefresh: 50 * time.Millisecond}, h)
		waitFor(t, time.Minute, "every task run", func() bool { return len(h.ran()) == 3*each })
		// while all three had a backlog (the first 300 of 450 runs), each
		// got about a third
		first := h.ran()[:2*each]
		for _, q := range queues {
			n := 0
			for _, x := range first {
				if x == q {
					n++
				}
			}
			t.Logf("%s ran %d of the first %d tasks", q, n, len(first))
			if share := float64(n) / float64(len(first)); share < 0.2 || share > 0.47 {
				t.Errorf("%s ran %d of the first %d tasks (%.2f), want about a third", q, n, len(first), share)
			}
		}
	})

	t.Run("DeletedQueueStopsBeingServed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &byQueue{}
		s := b.server(t, Config{QueuePatterns: map[string]int{"tenant:*": 1}, QueueRefresh: 100 * time.Millisecond}, h)
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In("tenant:gone"))
		waitFor(t, 20*time.Second, "the first task run", func() bool { return h.count("tenant:gone") == 1 })
		must(t, b.insp.DeleteQueue(ctx, "tenant:gone", true))
		waitFor(t, 20*time.Second, "the deleted queue to be dropped", func() bool {
			_, ok := s.engine.Queues()["tenant:gone"]
			return !ok
		})
		// b.client still believes the queue registered (it writes the entry
		// again within a minute): its task lands, and no fetcher takes it
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In("tenant:gone"))
		time.Sleep(time.Second)
		if n := h.count("tenant:gone"); n != 1 {
			t.Fatalf("%d tasks of the deleted queue ran, want only the one before", n)
		}
		// a producer that registers it again brings it back
		fresh, err := queue.NewClient(b.rdb, b.qcfg)
		must(t, err)
		_, err = fresh.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("tenant:gone"))
		must(t, err)
		waitFor(t, 20*time.Second, "the queue served again", func() bool { return h.count("tenant:gone") == 3 })
	})

	t.Run("NoMatchLeavesTheServerIdle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &byQueue{}
		s, err := NewServer(b.rdb, b.config(t, Config{QueuePatterns: map[string]int{"nobody:*": 1}, QueueRefresh: 50 * time.Millisecond}), h)
		must(t, err)
		must(t, s.Start(ctx))
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In("somebody"))
		time.Sleep(500 * time.Millisecond)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		must(t, s.Shutdown(sctx))
		if n := len(h.ran()); n != 0 || len(s.engine.Queues()) != 0 {
			t.Fatalf("an idle server ran %d tasks, served %v", n, s.engine.Queues())
		}
	})

	t.Run("StaticQueueKeepsItsWeight", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		h := &byQueue{}
		s := b.server(t, Config{Queues: map[string]int{"tenant:vip": 5}, QueuePatterns: map[string]int{"tenant:*": 1}, QueueRefresh: 50 * time.Millisecond}, h)
		b.enqueue(t, queue.NewRawTask("t", nil), queue.In("tenant:x"))
		waitFor(t, 20*time.Second, "tenant:x served", func() bool { return h.count("tenant:x") == 1 })
		if got := s.engine.Queues(); got["tenant:vip"] != 5 || got["tenant:x"] != 1 || len(got) != 2 {
			t.Fatalf("served %v, want tenant:vip at 5 and tenant:x at 1", got)
		}
	})

	t.Run("BadPatternsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, c := range []struct {
			patterns map[string]int
			want     string
		}{
			{map[string]int{"tenant:[": 1}, `"tenant:["`},
			{map[string]int{"tenant:*": 0}, "weight 0"},
			{map[string]int{"": 1}, `QueuePatterns ""`},
			{map[string]int{"{t}*": 1}, "braces"},
		} {
			_, err := NewServer(b.rdb, Config{QueuePatterns: c.patterns}, newRecorder(nil))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("QueuePatterns %v: %v, want ErrInvalid naming %s", c.patterns, err, c.want)
			}
		}
		_, err := NewServer(b.rdb, Config{QueuePatterns: map[string]int{"t*": 1}, QueueRefresh: time.Millisecond}, newRecorder(nil))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("QueueRefresh 1ms: %v, want ErrInvalid", err)
		}
	})
}
