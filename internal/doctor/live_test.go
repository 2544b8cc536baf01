package doctor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestHealthyEdgesAreClean: states that legitimately look odd are no
// violation: a batch not closed yet whose members all succeeded (its
// callbacks wait on its gate), a workflow whose nodes go to a queue no
// worker serves, a group at its GroupConcurrency with tasks held, a
// paused group, tasks leased by a live worker that is slow.
func TestHealthyEdgesAreClean(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var runs counter
	release := make(chan struct{})
	var slowStarted atomic.Int32
	h := func(ctx context.Context, task *worker.Task) error {
		runs.count(task.ID)
		if task.Type == "slow" {
			slowStarted.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	qs := map[string]int{"default": 1}
	srv, err := worker.NewServer(r.rdb, worker.Config{
		Config: r.cfg, Queues: qs, Concurrency: 4,
		Limits:          map[string]queue.Limits{"default": {GroupConcurrency: 1}},
		ForwardInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
	}, worker.HandlerFunc(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	batch, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("cb", []byte("ok")), OnComplete: queue.NewRawTask("cb", []byte("all"))})
	if err != nil {
		t.Fatal(err)
	}
	members, err := r.client.AddToBatch(ctx, batch, queue.NewRawTask("member", []byte("1")), queue.NewRawTask("member", []byte("2")))
	if err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorkflow()
	w.Add("a", queue.NewRawTask("wf", []byte("a")))
	w.Add("b", queue.NewRawTask("wf", []byte("b"), queue.In("unserved")), queue.After("a"))
	w.Add("c", queue.NewRawTask("wf", []byte("c"), queue.In("unserved")))
	if _, err := r.client.EnqueueWorkflow(ctx, w); err != nil {
		t.Fatal(err)
	}
	// a group at its limit: one slow task runs, two wait
	for i := range 3 {
		if _, err := r.client.Enqueue(ctx, queue.NewRawTask("slow", []byte(fmt.Sprint(i))), queue.Group("busy")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.insp.Pause(ctx, "default", "held"); err != nil {
		t.Fatal(err)
	}
	r.enqueue(t, 2, "held", queue.Group("held"))
	waitFor(t, 20*time.Second, "the members, the root and one slow task ran", func() bool {
		return runs.get(members[0].ID) == 1 && runs.get(members[1].ID) == 1 && slowStarted.Load() == 1 && runs.total() >= 4
	})
	// b is released into "unserved" once a succeeded
	waitFor(t, 20*time.Second, "b released", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "unserved")
		return err == nil && qi.Pending == 2
	})
	rep := r.audit(t, false)
	if rep.Violations != 0 {
		t.Fatalf("%d violations:%s", rep.Violations, describe(rep))
	}
}

// TestLiveTrafficIsClean: audits made while producers enqueue and a
// worker runs, retries and snoozes tasks report nothing: a task that
// moves while it is read is looked at twice.
func TestLiveTrafficIsClean(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int64
	h := func(ctx context.Context, task *worker.Task) error {
		switch n.Add(1) % 7 {
		case 0:
			return errors.New("again")
		case 3:
			if task.Attempt == 1 {
				return worker.Snooze(20 * time.Millisecond)
			}
		}
		time.Sleep(time.Millisecond)
		return nil
	}
	stop := r.serve(t, h, "default")
	var wg sync.WaitGroup
	produced := make(chan struct{}, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 5000; i++ {
			opts := []queue.Option{queue.MaxRetry(2)}
			switch i % 5 {
			case 1:
				opts = append(opts, queue.Group(fmt.Sprintf("g%d", i%3)))
			case 2:
				opts = append(opts, queue.ProcessIn(30*time.Millisecond))
			case 3:
				opts = append(opts, queue.Retention(time.Minute))
			case 4:
				opts = append(opts, queue.UniqueUntilFinished(0), queue.UniqueBy(fmt.Sprintf("u%d", i), time.Hour))
			}
			if _, err := r.client.Enqueue(ctx, queue.NewRawTask("t", []byte(fmt.Sprint(i))), opts...); err != nil && ctx.Err() == nil {
				t.Errorf("enqueue: %v", err)
				return
			}
			if i == 500 {
				produced <- struct{}{}
			}
		}
	}()
	<-produced
	for i := range 5 {
		rep, err := Run(ctx, r.rdb, Options{Prefix: r.prefix, Examples: 20, Page: 50})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Violations != 0 {
			t.Fatalf("audit %d under traffic: %d violations:%s", i, rep.Violations, describe(rep))
		}
	}
	cancel()
	wg.Wait()
	stop()
}
