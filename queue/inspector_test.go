package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestInspector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{FeedSize: 5})

	var ids []string
	for i := range 8 {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(fmt.Sprint(i))), In("feedq"))
		must(t, err)
		ids = append(ids, info.ID)
	}

	t.Run("Queues", func(t *testing.T) {
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("another"))
		must(t, err)
		qs, err := b.insp.Queues(ctx)
		must(t, err)
		if fmt.Sprint(qs) != "[another feedq]" {
			t.Fatalf("Queues = %v", qs)
		}
	})

	t.Run("QueueInfoLatency", func(t *testing.T) {
		time.Sleep(20 * time.Millisecond)
		qi, err := b.insp.QueueInfo(ctx, "feedq")
		must(t, err)
		if qi.Pending != 8 || qi.Latency < 20*time.Millisecond || qi.Latency > time.Minute || qi.Paused {
			t.Fatalf("QueueInfo = %+v", qi)
		}
		if _, err := b.insp.QueueInfo(ctx, "never-used"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"never-used"`) {
			t.Fatalf("QueueInfo of a queue never used: %v, want ErrNotFound naming it", err)
		}
	})

	t.Run("RecentFeedPagesAndCaps", func(t *testing.T) {
		p1, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", Limit: 2})
		must(t, err)
		p2, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", After: p1.Next, Limit: 10})
		must(t, err)
		var got []string
		for _, ti := range append(p1.Tasks, p2.Tasks...) {
			got = append(got, string(ti.Payload))
			if ti.State != StatePending || ti.Rank == 0 {
				t.Fatalf("feed entry %+v", ti)
			}
		}
		// FeedSize 5 keeps the newest five: 3..7
		if fmt.Sprint(got) != "[3 4 5 6 7]" {
			t.Fatalf("feed = %v", got)
		}
		p3, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", After: p2.Next})
		must(t, err)
		if len(p3.Tasks) != 0 {
			t.Fatalf("page past the end = %+v", p3)
		}
		newest, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", Newest: true, Limit: 1})
		must(t, err)
		if newest.Tasks[0].ID != ids[7] {
			t.Fatalf("newest = %s, want %s", newest.Tasks[0].ID, ids[7])
		}
	})

	t.Run("GetTask", func(t *testing.T) {
		ti, err := b.insp.GetTask(ctx, "feedq", ids[7])
		must(t, err)
		if string(ti.Payload) != "7" || ti.Rank != 8 {
			t.Fatalf("GetTask = %+v", ti)
		}
		// trimmed out of the feed while pending: nothing holds its message but the list
		if _, err := b.insp.GetTask(ctx, "feedq", ids[0]); !errors.Is(err, ErrNotFound) {
			t.Fatalf("trimmed pending task: err = %v, want ErrNotFound", err)
		}
		if _, err := b.insp.GetTask(ctx, "feedq", "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		if _, err := b.insp.GetTask(ctx, "a b", "x"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
		if _, err := b.insp.QueueInfo(ctx, "{x}"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
		if _, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", State: "bogus"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("DoneAndDeadFeedsStartEmpty", func(t *testing.T) {
		for _, f := range []State{StateSucceeded, StateDead} {
			p, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "feedq", State: f})
			must(t, err)
			if len(p.Tasks) != 0 {
				t.Fatalf("%s feed = %+v", f, p.Tasks)
			}
		}
	})
}

// TestFeedTailWhileProducersEnqueue: dashboard-style readers tail the recent
// feed by marker while producers enqueue batches; each reader sees every
// task once, in rank order.
func TestFeedTailWhileProducersEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	const producers, batches, per = 3, 20, 25
	total := producers * batches * per
	var wg sync.WaitGroup
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range batches {
				tasks := make([]*Task, per)
				for j := range tasks {
					tasks[j] = NewRawTask("t", nil, In("tail"))
				}
				if _, err := b.client.EnqueueMany(ctx, tasks); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var readersOK atomic.Int64
	deadline := time.Now().Add(20 * time.Second)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]bool{}
			var last int64
			marker := ""
			for len(seen) < total && time.Now().Before(deadline) {
				p, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "tail", After: marker, Limit: 40})
				if errors.Is(err, ErrNotFound) {
					time.Sleep(time.Millisecond) // no producer's first call has registered it yet
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, ti := range p.Tasks {
					if seen[ti.ID] || ti.Rank != last+1 {
						t.Errorf("task %s rank %d after rank %d: repeated or skipped", ti.ID, ti.Rank, last)
						return
					}
					seen[ti.ID] = true
					last = ti.Rank
				}
				marker = p.Next
			}
			if len(seen) == total {
				readersOK.Add(1)
			}
		}()
	}
	wg.Wait()
	if readersOK.Load() != 2 {
		t.Fatalf("%d of 2 readers saw all %d tasks", readersOK.Load(), total)
	}
}

// TestEnqueueWhileScriptCacheFlushed: SCRIPT FLUSH over and over while
// producers enqueue: no error reaches a caller and nothing is lost.
func TestEnqueueWhileScriptCacheFlushed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	var stop atomic.Bool
	var flushes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if b.rdb.ScriptFlush(ctx).Err() == nil {
				flushes.Add(1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	// enqueue until the cache was flushed often enough to prove something
	// (bounded: 3,000 batches, 10 s)
	batches := 0
	for deadline := time.Now().Add(10 * time.Second); batches < 300 || flushes.Load() < 20; batches++ {
		if batches == 3000 || time.Now().After(deadline) {
			break
		}
		tasks := []*Task{NewRawTask("t", nil), NewRawTask("t", nil)}
		if _, err := b.client.EnqueueMany(ctx, tasks, In(fmt.Sprint("q", batches%3))); err != nil {
			t.Fatalf("batch %d: %v", batches, err)
		}
	}
	stop.Store(true)
	<-done
	var total int64
	for q := range 3 {
		qi, err := b.insp.QueueInfo(ctx, fmt.Sprint("q", q))
		must(t, err)
		total += qi.Pending
	}
	if total != int64(2*batches) || flushes.Load() < 10 {
		t.Fatalf("%d tasks pending of %d, over %d flushes", total, 2*batches, flushes.Load())
	}
}
