package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
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

// TestKeyMaxDepthWithWorkers: a producer of one key waits for room under
// GroupMaxDepth 5 while a worker runs the key one task at a time (some
// tasks failing once): every task gets in and runs, the key's count never
// passes 5, and it is gone once all ran (counted out at the first start
// only, not again at a retry's).
func TestKeyMaxDepthWithWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 30
	must(t, b.insp.SetLimits(ctx, "kq", queue.Limits{GroupMaxDepth: 5, GroupConcurrency: 1}))
	var mu sync.Mutex
	runs := map[string]int{}
	done := 0
	h := HandlerFunc(func(_ context.Context, task *Task) error {
		mu.Lock()
		defer mu.Unlock()
		runs[task.ID]++
		if i, _ := strconv.Atoi(string(task.Payload)); i%3 == 0 && runs[task.ID] == 1 {
			return RetryIn(10*time.Millisecond, errors.New("once"))
		}
		done++
		return nil
	})
	b.server(t, Config{Queues: map[string]int{"kq": 1}, Concurrency: 4, ForwardInterval: 20 * time.Millisecond}, h)
	kdepth := keys.For(b.qcfg.Prefix, "kq", 0).KeyDepth()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if v, err := b.rdb.HGet(ctx, kdepth, "k").Int64(); err == nil && v > peak.Load() {
				peak.Store(v)
			}
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for i := range n {
		_, err := b.client.Enqueue(wctx, queue.NewRawTask("t", []byte(strconv.Itoa(i))), queue.In("kq"), queue.Group("k"), queue.WaitForRoom())
		must(t, err)
	}
	waitFor(t, time.Minute, "every task done", func() bool { mu.Lock(); defer mu.Unlock(); return done == n })
	close(stop)
	<-sampled
	if p := peak.Load(); p > 5 || p == 0 {
		t.Fatalf("key k's count peaked at %d, GroupMaxDepth 5", p)
	}
	if left := b.rdb.HLen(ctx, kdepth).Val(); left != 0 {
		t.Fatalf("%d keys still counted after every task ran", left)
	}
}
