package worker

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// TestScalingFollowsBacklog: the desired-workers figure is 0 for an idle
// queue, 1 for work no worker has timed yet, rises with the backlog once a
// worker reports its handler time, and falls back to 0 as the queue drains
// and arrivals stop.
func TestScalingFollowsBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	scaling := func() *queue.Scaling {
		t.Helper()
		sc, err := b.insp.Scaling(ctx, queue.ScalingQuery{Queue: queue.DefaultQueue, DrainTime: time.Second, RateWindow: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	if _, err := b.insp.Scaling(ctx, queue.ScalingQuery{Queue: queue.DefaultQueue}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a queue never used: %v, want ErrQueueNotFound", err)
	}
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{})) // known, empty
	if sc := scaling(); sc.DesiredWorkers != 0 || sc.Backlog != 0 {
		t.Fatalf("idle queue: %+v, want 0 desired", sc)
	}
	enqueueN(t, b, 100)
	if sc := scaling(); sc.DesiredWorkers != 1 || sc.Backlog != 100 || sc.MeanHandlerTime != 0 {
		t.Fatalf("100 pending, no worker yet: %+v, want 1 desired (one to learn the handler time from)", sc)
	}
	release := make(chan struct{})
	b.server(t, Config{Concurrency: 2, Heartbeat: 100 * time.Millisecond}, HandlerFunc(func(ctx context.Context, task *Task) error {
		select {
		case <-release:
			time.Sleep(5 * time.Millisecond)
		case <-time.After(5 * time.Millisecond):
		}
		return nil
	}))
	var small *queue.Scaling
	waitFor(t, 15*time.Second, "a handler time reported", func() bool {
		small = scaling()
		return small.MeanHandlerTime > 0 && small.Workers == 1
	})
	if small.WorkerConcurrency != 2 || small.MeanHandlerTime < 4*time.Millisecond || small.MeanHandlerTime > time.Second {
		t.Fatalf("inputs %+v: want the worker's concurrency 2 and a handler time near 5ms", small)
	}
	enqueueN(t, b, 3000)
	// a rate is measured over at least a tenth of the window (200ms)
	time.Sleep(300 * time.Millisecond)
	big := scaling()
	t.Logf("backlog %d: %+v", small.Backlog, small)
	t.Logf("backlog %d: %+v", big.Backlog, big)
	if big.ArrivalRate <= 0 {
		t.Fatalf("3000 tasks just arrived, arrival rate %v", big.ArrivalRate)
	}
	if big.Backlog <= small.Backlog || big.DesiredWorkers <= small.DesiredWorkers || big.DesiredWorkers < 3 {
		t.Fatalf("desired %d at backlog %d, then %d at backlog %d: want it to rise with the backlog",
			small.DesiredWorkers, small.Backlog, big.DesiredWorkers, big.Backlog)
	}
	close(release)
	var last *queue.Scaling
	waitFor(t, 60*time.Second, "the figure back to 0 once drained", func() bool {
		last = scaling()
		return last.DesiredWorkers == 0
	})
	if last.Backlog != 0 || last.Running != 0 || last.ArrivalRate != 0 {
		t.Fatalf("drained: %+v", last)
	}
}

// TestWorkerStatus: a worker publishes who it is and what it serves with
// its heartbeat, the inspector reads it, and a worker that stops takes its
// status with it.
func TestWorkerStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueN(t, b, 20, queue.In("a"))
	s := b.server(t, Config{Queues: map[string]int{"a": 2, "b": 1}, Concurrency: 3, Heartbeat: 100 * time.Millisecond},
		HandlerFunc(func(ctx context.Context, task *Task) error { time.Sleep(time.Millisecond); return nil }))
	host, _ := os.Hostname()
	var w *queue.WorkerInfo
	waitFor(t, 15*time.Second, "the status with 20 tasks done", func() bool {
		ws, err := b.insp.Workers(ctx)
		if err != nil || len(ws) != 1 {
			return false
		}
		w = ws[0]
		return w.Work["a"].Finished == 20
	})
	if w.ID != s.ID() || w.Host != host || w.PID != os.Getpid() || w.Concurrency != 3 || w.Queues["a"] != 2 || w.Queues["b"] != 1 ||
		w.Started.IsZero() || !serves(w, "b") || serves(w, "c") || w.Work["a"].MeanHandlerTime < time.Millisecond {
		t.Fatalf("worker %+v", w)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, s.Shutdown(sctx))
	if n, err := b.rdb.HLen(ctx, keys.WorkerStatus(b.qcfg.Prefix)).Result(); err != nil || n != 0 {
		t.Fatalf("after shutdown: %d statuses left, %v", n, err)
	}
}

// serves reports whether w runs tasks of q.
func serves(w *queue.WorkerInfo, q string) bool {
	_, ok := w.Queues[q]
	return ok
}
