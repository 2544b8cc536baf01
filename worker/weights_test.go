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
	// ideal 360 / 180 / 60; 362-368 / 173-187 / 51-60 measured. Slots
	// are held for a backlogged queue whose fetcher is out popping
	// (slots.owed), so the split holds under load too; the bounds still
	// fail the split before that (312 / 177 / 111 on a busy CI machine).
	t.Logf("first %d starts: %v (ideal critical 360, default 180, low 60)", counted, started)
	if c, d, l := started["critical"], started["default"], started["low"]; c < 330 || d < 150 || d > 210 || l > 85 {
		t.Fatalf("first %d starts split %v, want about critical 360, default 180, low 60", counted, started)
	}
}

// TestWeightsShortHandlers: weights critical:3, low:1 on eight slots hold
// for handlers of any length. Critical's share of the first 1,000
// completions is 0.75 within 0.05 whether a handler takes 0, 1 or 10 ms.
// (Short handlers once gave 0.57-0.62: slots freed while critical's
// fetcher was out popping went to low, which was waiting.)
func TestWeightsShortHandlers(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			const each, counted = 2000, 1000
			enqueueN(t, b, each, queue.In("critical"))
			enqueueN(t, b, each, queue.In("low"))
			var mu sync.Mutex
			done := map[string]int{}
			total := 0
			all := make(chan struct{})
			b.server(t, Config{Queues: map[string]int{"critical": 3, "low": 1}, Concurrency: 8},
				HandlerFunc(func(ctx context.Context, task *Task) error {
					if d > 0 {
						time.Sleep(d)
					}
					mu.Lock()
					defer mu.Unlock()
					if total < counted {
						done[task.Queue]++
						if total++; total == counted {
							close(all)
						}
					}
					return nil
				}))
			select {
			case <-all:
			case <-time.After(60 * time.Second):
				t.Fatalf("the first %d tasks did not finish within 60s", counted)
			}
			mu.Lock()
			defer mu.Unlock()
			share := float64(done["critical"]) / counted
			t.Logf("handler %v: first %d completions %v, critical's share %.3f", d, counted, done, share)
			if share < 0.70 || share > 0.80 {
				t.Errorf("handler %v: critical's share of the first %d completions is %.3f (%v), want 0.75±0.05", d, counted, share, done)
			}
		})
	}
}
