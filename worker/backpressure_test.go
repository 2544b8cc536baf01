package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestMaxDepthWithWorkers: 16 producers that wait for room feed a queue
// with a MaxDepth while a worker drains it. Every task gets in once a
// worker made room, and the depth sampled meanwhile never passes MaxDepth.
func TestMaxDepthWithWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const max, producers, each = 20, 16, 25
	must(t, b.insp.SetLimits(ctx, "bp", queue.Limits{MaxDepth: max}))
	rec := newRecorder(func(context.Context, *Task) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	b.server(t, Config{Queues: map[string]int{"bp": 1}, Concurrency: 4, Limits: map[string]queue.Limits{"bp": {MaxDepth: max}}}, rec)

	stop := make(chan struct{})
	var peak atomic.Int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			qi, err := b.insp.QueueInfo(ctx, "bp")
			if err != nil {
				t.Error(err)
				return
			}
			if d := qi.Pending + qi.Scheduled + qi.Retry; d > peak.Load() {
				peak.Store(d)
			}
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := b.client.Enqueue(wctx, queue.NewRawTask("t", []byte(fmt.Sprint(p, i))), queue.In("bp"), queue.WaitForRoom()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, time.Minute, "every task run", func() bool { return rec.total() == producers*each })
	close(stop)
	sampler.Wait()
	if p := peak.Load(); p > max || p == 0 {
		t.Fatalf("the depth peaked at %d, MaxDepth %d", p, max)
	}
	t.Logf("depth peaked at %d of %d", peak.Load(), max)
}
