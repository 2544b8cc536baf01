package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestWeightedQueues runs three backlogged queues weighted 6, 3 and 1 on
// one worker with ten slots: the tasks started split by weight. (With a
// weighted draw among the fetchers that happened to wait, the split came
// out near even, 244/197/159 of 600, since a busy fetcher is out popping
// while the others queue up.)
func TestWeightedQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	weights := map[string]int{"critical": 6, "default": 3, "low": 1}
	const each, counted = 400, 600
	for q := range weights {
		enqueueN(t, b, each, queue.In(q))
	}
	var mu sync.Mutex
	started := map[string]int{}
	total := 0
	all := make(chan struct{})
	b.server(t, Config{Queues: weights, Concurrency: 10}, HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		if total < counted {
			started[task.Queue]++
			if total++; total == counted {
				close(all)
			}
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		return nil
	}))
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatal("the first 600 tasks did not start within 30s")
	}
	mu.Lock()
	defer mu.Unlock()
	// ideal 360 / 180 / 60, and 345-368 / 168-190 / 53-87 measured, the
	// widest under load: slots are never left idle, so when a heavy
	// queue's fetcher is late back in line a lighter one takes the slot.
	// The bounds leave room for that and still fail the weighted draw
	// this replaced (244 / 197 / 159).
	t.Logf("first %d starts: %v (ideal critical 360, default 180, low 60)", counted, started)
	if c, d, l := started["critical"], started["default"], started["low"]; c < 300 || d < 130 || d > 230 || l > 110 {
		t.Fatalf("first %d starts split %v, want about critical 360, default 180, low 60", counted, started)
	}
}
