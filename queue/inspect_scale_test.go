package queue_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// TestInspectorAtScale: with 1,000,000 pending tasks (and 100,000
// scheduled), every Inspector read the dashboard makes costs a few round
// trips and returns fast. Skipped with -short; SHARDQ_SCALE_TASKS changes
// the size.
func TestInspectorAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a queue of 1,000,000 tasks; skipped with -short")
	}
	t.Parallel()
	total := 1_000_000
	if v := os.Getenv("SHARDQ_SCALE_TASKS"); v != "" {
		var err error
		if total, err = parseInt(v); err != nil || total < 500_000 {
			t.Fatal(err)
		}
	}
	b := isetup(t, queue.Config{FeedSize: 1000})
	// The loading scripts (25,000 tasks each, four producers) queue up
	// behind one another in Redis: on a loaded machine one waits longer
	// than go-redis's default 3s read timeout, and a script call is never
	// resent after a timeout, so the loader's client waits longer.
	loadRDB := redis.NewClient(&redis.Options{Addr: b.srv.Addr, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = loadRDB.Close() })
	loader, err := queue.NewClient(loadRDB, b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// producers in parallel: encoding is the client's work, Redis runs one script at a time
	const batch = 25_000
	scheduled := total / 10
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks := make([]*queue.Task, batch)
			for j := range tasks {
				tasks[j] = queue.NewRawTask("t", []byte("payload"))
			}
			for n := p * batch; n < total+scheduled; n += 4 * batch {
				opts := []queue.Option{queue.In("big")}
				if n >= total {
					opts = append(opts, queue.ProcessIn(time.Hour))
				}
				if _, err := loader.EnqueueMany(b.ctx, tasks[:min(batch, total+scheduled-n)], opts...); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("enqueued %d pending and %d scheduled in %v", total, scheduled, time.Since(start))
	must(t, script.LoadAll(b.ctx, b.rdb))

	measure := func(name string, maxRoundTrips int64, f func() error) {
		t.Helper()
		b.calls.reset()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		took := time.Since(start)
		rt, cmds := b.calls.roundTrips.Load(), b.calls.commands.Load()
		t.Logf("%-28s %2d round trips, %2d commands, %v", name, rt, cmds, took)
		// the round trips are the bound; the time only catches a call that
		// walks the million tasks, with room for a loaded machine
		if rt > maxRoundTrips || took > 10*time.Second {
			t.Errorf("%s: %d round trips (want <= %d) in %v", name, rt, maxRoundTrips, took)
		}
	}
	var page *queue.TaskPage
	measure("QueueInfo", 2, func() error {
		qi, err := b.insp.QueueInfo(b.ctx, "big")
		if err == nil && qi.Pending != int64(total) {
			t.Errorf("pending %d, want %d", qi.Pending, total)
		}
		return err
	})
	measure("ListTasks pending", 2, func() (err error) {
		page, err = b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", State: queue.StatePending})
		return err
	})
	// deep into the list: 400 pages of 1000 in
	for range 400 {
		p, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", State: queue.StatePending, After: page.Next, Limit: 1000})
		must(t, err)
		page = p
	}
	measure("ListTasks pending, page 401", 2, func() error {
		p, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", State: queue.StatePending, After: page.Next})
		if err == nil && len(p.Tasks) != 50 {
			t.Errorf("page of %d", len(p.Tasks))
		}
		return err
	})
	var sched *queue.TaskPage
	measure("ListTasks scheduled, 2 pages", 4, func() error {
		p, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", State: queue.StateScheduled, Limit: 100})
		if err == nil {
			sched, err = b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", State: queue.StateScheduled, After: p.Next, Limit: 100})
		}
		return err
	})
	measure("ListTasks recent, newest", 2, func() error {
		_, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "big", Newest: true})
		return err
	})
	measure("History day", 2, func() error {
		_, err := b.insp.History(b.ctx, 24*time.Hour, "big")
		return err
	})
	measure("GetTask", 2, func() error {
		_, err := b.insp.GetTask(b.ctx, "big", sched.Tasks[0].ID)
		return err
	})
	measure("Workers", 2, func() error {
		_, err := b.insp.Workers(b.ctx)
		return err
	})
}
