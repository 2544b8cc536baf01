package queuetest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/queuetest"
	"github.com/shardq/shardq/worker"
)

// Welcome is the payload of the code under test below.
type Welcome struct{ To string }

// signup is "the user's code": it enqueues a welcome email now and a
// reminder tomorrow.
func signup(ctx context.Context, c *queue.Client, to string) error {
	now, err := queue.NewTask("email:welcome", Welcome{To: to})
	if err != nil {
		return err
	}
	later, err := queue.NewTask("email:reminder", Welcome{To: to})
	if err != nil {
		return err
	}
	if _, err = c.Enqueue(ctx, now, queue.In("email")); err != nil {
		return err
	}
	_, err = c.Enqueue(ctx, later, queue.In("email"), queue.ProcessIn(24*time.Hour), queue.TaskID("reminder-"+to))
	return err
}

// TestSignupEnqueuesAndRetries is written as a user would: assert what
// the code enqueued, then drain the queue through a handler that fails
// twice before it succeeds, with no sleeping: the retries' backoff and the
// reminder scheduled a day ahead run at once, the clock moved forward.
func TestSignupEnqueuesAndRetries(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	if err := signup(ctx, env.Client, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	env.RequireEnqueued(t, "email", "email:welcome", func(ti *queue.TaskInfo) bool {
		var w Welcome
		return ti.Decode(&w) == nil && w.To == "ann@example.com"
	})
	reminder := env.RequireEnqueued(t, "email", "email:reminder", func(ti *queue.TaskInfo) bool {
		return ti.State == queue.StateScheduled
	})
	if until := time.Until(reminder.NextProcessAt); until < 23*time.Hour {
		t.Fatalf("reminder due in %v, want a day", until)
	}

	var mu sync.Mutex // Drain runs handlers at once
	attempts := map[string]int{}
	mux := worker.NewMux()
	mux.Handle("email:welcome", worker.Typed(func(ctx context.Context, task *worker.Task, w Welcome) error {
		mu.Lock()
		attempts[task.ID]++
		mu.Unlock()
		if task.Attempt <= 2 {
			return errors.New("smtp busy") // retried with the default backoff
		}
		return nil
	}))
	mux.Handle("email:reminder", worker.Typed(func(ctx context.Context, task *worker.Task, w Welcome) error {
		mu.Lock()
		attempts[task.ID]++
		mu.Unlock()
		return nil
	}))
	start := time.Now()
	res := env.Drain(t, mux, "email")
	if res.Succeeded != 2 || res.Dead != 0 || res.Runs != 4 {
		t.Fatalf("drain: %+v, want 2 done in 4 runs (the welcome in 3 attempts, the reminder)", res)
	}
	if res.Advanced < 24*time.Hour {
		t.Fatalf("the clock moved %v, want past the day-ahead reminder", res.Advanced)
	}
	if real := time.Since(start); real > 30*time.Second {
		t.Fatalf("draining took %v of real time: it should not wait out the backoff", real)
	}
	if left, _ := env.Enqueued(ctx, "email"); len(left) != 0 {
		t.Fatalf("%d tasks left", len(left))
	}
}

// TestDrainDeadTask: a task that never succeeds ends dead once its
// retries are spent, still without waiting.
func TestDrainDeadTask(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	if _, err := env.Client.Enqueue(ctx, queue.NewRawTask("flaky", nil), queue.MaxRetry(3)); err != nil {
		t.Fatal(err)
	}
	res := env.Drain(t, worker.HandlerFunc(func(context.Context, *worker.Task) error { return errors.New("no") }))
	if res.Runs != 4 || res.Dead != 1 {
		t.Fatalf("drain: %+v, want 4 runs and one dead", res)
	}
}

// TestNightlyReport is written as a user would test a nightly cron job:
// two days pass on the test clock, and the report runs at 03:00 UTC each
// night, in order, without sleeping.
func TestNightlyReport(t *testing.T) {
	env := queuetest.New(t)
	// start at noon, so the first night's 03:00 is 15 hours ahead
	now := env.Clock.Now().UTC()
	env.Clock.Advance(time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC).Add(24 * time.Hour).Sub(now))
	env.Schedule(t, worker.Schedule{
		Name: "nightly-report",
		Spec: "0 3 * * *",
		Task: queue.NewRawTask("report:nightly", nil),
	}, worker.Schedule{
		Spec:    "@every 6h",
		Task:    queue.NewRawTask("cache:warm", nil),
		Options: []queue.Option{queue.In("maintenance")},
	})

	var mu sync.Mutex // Advance's worker runs handlers concurrently
	var reports []time.Time
	warms := 0
	mux := worker.NewMux()
	mux.HandleFunc("report:nightly", func(ctx context.Context, task *worker.Task) error {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, env.Clock.Now())
		if len(reports) == 1 && task.Attempt == 1 {
			return errors.New("warehouse not ready") // the first night's report retries
		}
		return nil
	})
	mux.HandleFunc("cache:warm", func(context.Context, *worker.Task) error { mu.Lock(); warms++; mu.Unlock(); return nil })

	start := env.Clock.Now()
	res := env.Advance(t, mux, 48*time.Hour)
	if got := env.Clock.Now().Sub(start); got != 48*time.Hour {
		t.Fatalf("the clock moved %v, want exactly 48h", got)
	}
	// two nights, the first one's report run twice (a retry after its backoff)
	if res.Succeeded != 2+8 || res.Runs != 3+8 || res.Dead != 0 {
		t.Fatalf("advance: %+v, want 2 reports (one retried once) and 8 cache warms done", res)
	}
	if warms != 8 {
		t.Fatalf("cache warmed %d times in 48h of @every 6h, want 8", warms)
	}
	if len(reports) != 3 {
		t.Fatalf("report ran %d times, want 3", len(reports))
	}
	for i, at := range []time.Time{reports[0], reports[2]} {
		want := time.Date(start.Year(), start.Month(), start.Day()+1+i, 3, 0, 0, 0, time.UTC)
		if at.Before(want) || at.Sub(want) > time.Minute {
			t.Fatalf("night %d's report ran at %v, want at %v", i+1, at, want)
		}
	}
	if !reports[1].After(reports[0]) || reports[1].After(reports[2]) {
		t.Fatalf("the retry ran at %v, want between the two nights (%v, %v)", reports[1], reports[0], reports[2])
	}
	infos, err := env.Inspector.Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("Schedules: %d, want both recorded", len(infos))
	}
}

// TestAdvanceBadInput: a negative duration and a bad schedule fail the
// test with a clear message rather than running anything.
func TestAdvanceBadInput(t *testing.T) {
	env := queuetest.New(t)
	for name, f := range map[string]func(tb testing.TB){
		"negative": func(tb testing.TB) { env.Advance(tb, worker.NewMux(), -time.Second) },
		"bad spec": func(tb testing.TB) {
			env.Schedule(tb, worker.Schedule{Spec: "every tuesday", Task: queue.NewRawTask("x", nil)})
		},
	} {
		ft := &fatalT{TB: t}
		func() {
			defer func() { _ = recover() }()
			f(ft)
		}()
		if ft.msg == "" {
			t.Fatalf("%s: the test did not fail", name)
		}
	}
}

// fatalT records a Fatalf instead of ending the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = format
	panic("fatal")
}

// TestBatchCallback is written as a user would test code that fans out
// work as a batch: the export's parts run (one retries after a backoff),
// and Drain returns once the batch's callback has run, exactly once,
// without sleeping.
func TestBatchCallback(t *testing.T) {
	env := queuetest.New(t, queuetest.Options{Config: queue.Config{Partitions: map[string]int{"exports": 4}}})
	ctx := context.Background()
	// the code under test: one part per month, and a callback that zips them
	exportYear := func(ctx context.Context) (string, error) {
		b, err := env.Client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("export:zip", nil, queue.In("exports"))})
		if err != nil {
			return "", err
		}
		var parts []*queue.Task
		for m := 1; m <= 12; m++ {
			parts = append(parts, queue.NewRawTask("export:month", []byte{byte(m)}, queue.In("exports")))
		}
		if _, err := env.Client.AddToBatch(ctx, b, parts...); err != nil {
			return "", err
		}
		return b, env.Client.CloseBatch(ctx, b)
	}
	id, err := exportYear(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var months, zips atomic.Int64 // Drain's worker runs handlers concurrently
	mux := worker.NewMux()
	mux.HandleFunc("export:month", func(ctx context.Context, task *worker.Task) error {
		if task.Payload[0] == 6 && task.Attempt == 1 {
			return errors.New("June's data not ready") // retried after its backoff
		}
		months.Add(1)
		return nil
	})
	mux.HandleFunc("export:zip", func(context.Context, *worker.Task) error {
		if n := months.Load(); n != 12 {
			return fmt.Errorf("zip ran after %d of 12 months", n)
		}
		zips.Add(1)
		return nil
	})
	res := env.Drain(t, mux, "exports")
	if zips.Load() != 1 || res.Dead != 0 || res.Succeeded != 13 {
		t.Fatalf("drain: %+v, zip ran %d times: want the 12 months, then the zip once", res, zips.Load())
	}
	// a batch is a workflow: the 12 months, the gate .close and the
	// callback .on-success, every one succeeded
	bi, err := env.Inspector.GetWorkflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if bi.State != queue.StateSucceeded || bi.Total != 14 || bi.Counts[queue.StateSucceeded] != 14 ||
		bi.Node(".close") == nil || bi.Node(".on-success") == nil || bi.Node(".on-success").State != queue.StateSucceeded {
		t.Fatalf("batch after the drain: %+v", bi)
	}
}

// TestAlbumBatchCallback is written as a user would: the code under test
// resizes an album's photos in a batch whose success callback publishes
// the album; one Drain runs the members and then the callback, once.
func TestAlbumBatchCallback(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	publish, err := queue.NewTask("album:publish", Welcome{To: "album-7"})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := env.Client.NewBatch(ctx, queue.BatchOptions{OnSuccess: publish})
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		if _, err := env.Client.AddToBatch(ctx, batch, queue.NewRawTask("photo:resize", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.CloseBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // Drain runs handlers concurrently
	var resized, published int
	res := env.Drain(t, worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		mu.Lock()
		defer mu.Unlock()
		switch task.Type {
		case "photo:resize":
			resized++
		case "album:publish":
			if resized != 12 {
				t.Errorf("published after %d of 12 photos", resized)
			}
			published++
		}
		return nil
	}))
	if resized != 12 || published != 1 || res.Succeeded != 13 {
		t.Fatalf("resized %d, published %d, drain %+v", resized, published, res)
	}
	// a batch is a workflow: 12 members, its gate and its callback
	info, err := env.Inspector.GetWorkflow(ctx, batch)
	if err != nil || info.State != queue.StateSucceeded || info.Total != 14 || info.Counts[queue.StateSucceeded] != 14 {
		t.Fatalf("batch: %+v, %v", info, err)
	}
}

// TestWorkflowDrain is written as a user would test code that runs a
// graph: one Drain runs every node in the graph's order, the fan-out a
// node adds included, and returns once the last node ran.
func TestWorkflowDrain(t *testing.T) {
	env := queuetest.New(t)
	ctx := context.Background()
	wf := queue.NewWorkflow()
	wf.Add("fetch", queue.NewRawTask("order:fetch", nil))
	wf.Add("charge", queue.NewRawTask("order:charge", nil), queue.After("fetch"))
	wf.Add("reserve", queue.NewRawTask("order:reserve", nil), queue.After("fetch"))
	wf.Add("ship", queue.NewRawTask("order:ship", nil), queue.After("charge"), queue.After("reserve"))
	id, err := env.Client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // Drain runs handlers concurrently
	var order []string
	res := env.Drain(t, worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		mu.Lock()
		order = append(order, task.Type)
		mu.Unlock()
		switch task.Type {
		case "order:reserve":
			// one label per parcel, added from inside the graph
			more := queue.NewWorkflow()
			for _, p := range []string{"label-1", "label-2"} {
				more.Add(p, queue.NewRawTask("order:label", nil), queue.After("reserve"))
			}
			return task.ExtendWorkflow(ctx, more)
		case "order:ship":
			if v, err := task.ParentResult(ctx, "charge"); err != nil || string(v) != "paid" {
				return fmt.Errorf("charge's result: %q, %v", v, err)
			}
		case "order:charge":
			return task.SetResult(ctx, []byte("paid"))
		}
		return nil
	}))
	if res.Succeeded != 6 || res.Dead != 0 || len(order) != 6 || order[0] != "order:fetch" ||
		slices.Index(order, "order:ship") < slices.Index(order, "order:charge") ||
		slices.Index(order, "order:ship") < slices.Index(order, "order:reserve") {
		t.Fatalf("drain %+v, order %v", res, order)
	}
	wi, err := env.Inspector.GetWorkflow(ctx, id)
	if err != nil || wi.State != queue.StateSucceeded || len(wi.Nodes) != 6 {
		t.Fatalf("workflow after the drain: %+v, %v", wi, err)
	}
}

// TestOptionsURL: an Env given a URL keeps its keys in that Redis, under
// a prefix of its own, and deletes them at the end of its test.
func TestOptionsURL(t *testing.T) {
	srv, err := redisproc.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rdb, err := queue.NewRedisClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	var prefix string
	t.Run("env", func(t *testing.T) {
		env := queuetest.New(t, queuetest.Options{URL: srv.URL()})
		prefix = env.Config.Prefix
		if _, err := env.Client.Enqueue(ctx, queue.NewRawTask("t", nil)); err != nil {
			t.Fatal(err)
		}
		n, err := rdb.DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Fatalf("the Redis at Options.URL holds %d keys (%v), want the task's", n, err)
		}
		env.RequireEnqueued(t, queue.DefaultQueue, "t")
	})
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if prefix == "" || len(keys) != 0 {
		t.Fatalf("after the test, keys %v remain (prefix %q), want none", keys, prefix)
	}
}

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestNewTakesOneOptions: two Options fail the test rather than one
// silently winning.
func TestNewTakesOneOptions(t *testing.T) {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		queuetest.New(tb, queuetest.Options{}, queuetest.Options{})
	}()
	<-done
	if !strings.Contains(tb.msg, "at most one Options") {
		t.Fatalf("New with two Options: %q, want a failure saying it takes at most one", tb.msg)
	}
}
