package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

type greeting struct{ Name string }

func TestProcessing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("TypedHandlerGetsPayloadAndContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got := make(chan string, 1)
		mux := NewMux()
		mux.Handle("greet", Typed(func(ctx context.Context, task *Task, g greeting) error {
			ct, ok := TaskFromContext(ctx)
			if !ok || ct.ID != task.ID || task.Queue != "hello" || task.Attempt != 1 {
				return fmt.Errorf("context task %+v, task %+v", ct, task)
			}
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
				return fmt.Errorf("context deadline %v, want the task's 1m timeout", dl)
			}
			got <- g.Name
			return nil
		}))
		b.server(t, Config{Queues: map[string]int{"hello": 1}}, mux)
		task, _ := queue.NewTask("greet", greeting{Name: "Ann"})
		info := b.enqueue(t, task, queue.In("hello"), queue.Timeout(time.Minute))
		select {
		case name := <-got:
			if name != "Ann" {
				t.Fatalf("payload name %q", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("handler never ran")
		}
		waitFor(t, 5*time.Second, "the ack", func() bool {
			qi, _ := b.insp.QueueInfo(ctx, "hello")
			return qi.Active == 0 && qi.Pending == 0
		})
		if _, err := b.insp.GetTask(ctx, "hello", info.ID); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("acked task without retention: GetTask err = %v, want ErrTaskNotFound", err)
		}
	})

	// A queue holding plain tasks in both message forms (the compact one
	// this client writes, the full one Config.FullMessages and workers
	// before the compact form write) runs each once, with its payload,
	// payload kind and retries as enqueued.
	t.Run("BothMessageForms", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fullCfg := b.qcfg
		fullCfg.FullMessages = true
		full, err := queue.NewClient(b.rdb, fullCfg)
		must(t, err)
		rec := newRecorder(nil)
		var sent []*queue.TaskInfo
		for _, c := range []*queue.Client{b.client, full} {
			g, _ := queue.NewTask("greet", greeting{Name: "Ann"})
			for _, task := range []*queue.Task{g, queue.NewRawTask("raw", []byte("bytes"))} {
				info, err := c.Enqueue(ctx, task)
				must(t, err)
				sent = append(sent, info)
			}
		}
		b.server(t, Config{}, rec)
		waitFor(t, 5*time.Second, "four runs", func() bool { return rec.total() == 4 })
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, info := range sent {
			var ran *Task
			for _, task := range rec.tasks {
				if task.ID == info.ID {
					ran = task
				}
			}
			if ran == nil || rec.runs[info.ID] != 1 || string(ran.Payload) != string(info.Payload) || ran.Raw != info.Raw ||
				ran.MaxRetry != config.DefaultMaxRetry || ran.Type != info.Type {
				t.Fatalf("task %+v ran %d times as %+v", info, rec.runs[info.ID], ran)
			}
			if !ran.Raw {
				var g greeting
				if err := ran.Decode(&g); err != nil || g.Name != "Ann" {
					t.Fatalf("msgpack payload decoded to %+v, %v", g, err)
				}
			}
		}
	})

	// An idle worker's fetcher blocks in a slice, and the task pushed
	// meanwhile is taken by the blocking move itself, not by a later poll.
	// A push that lands as a slice ends is taken by the next pop: that
	// round is tried again.
	t.Run("IdleWorkerTakesNewTaskInItsBlock", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		moves := &moveHook{inFlight: map[string]int{}}
		b.rdb.AddHook(moves)
		started := make(chan string, 10)
		b.server(t, Config{}, HandlerFunc(func(ctx context.Context, task *Task) error {
			started <- task.ID
			return nil
		}))
		shards := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0).ShardPrefix()
		taken, tries := 0, 0
		for taken < 3 {
			if tries++; tries > 8 {
				t.Fatalf("%d of %d tasks pushed while the fetcher blocked were taken by its blocking move", taken, tries-1)
			}
			waitFor(t, 10*time.Second, "the fetcher blocked in its slice", func() bool { return moves.blocking(shards) })
			info := b.enqueue(t, queue.NewRawTask("t", nil))
			if id := <-started; id != info.ID {
				t.Fatalf("started %s, want %s", id, info.ID)
			}
			if moves.took(wire.StoredID(info.ID)) {
				taken++
			}
		}
	})

	t.Run("RetentionKeepsDoneTask", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.server(t, Config{}, HandlerFunc(func(ctx context.Context, task *Task) error { return nil }))
		info := b.enqueue(t, queue.NewRawTask("t", []byte("kept")), queue.Retention(time.Hour))
		waitFor(t, 5*time.Second, "done", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateSucceeded
		})
		page, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateSucceeded})
		must(t, err)
		if len(page.Tasks) != 1 || string(page.Tasks[0].Payload) != "kept" || page.Tasks[0].FinishedAt.IsZero() {
			t.Fatalf("done feed = %+v", page.Tasks)
		}
	})

	t.Run("UniqueLockReleasedOnSuccess", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := newRecorder(nil)
		b.server(t, Config{}, rec)
		task := queue.NewRawTask("u", []byte("x"))
		b.enqueue(t, task, queue.Unique(time.Hour))
		waitFor(t, 5*time.Second, "first run", func() bool { return rec.total() == 1 })
		waitFor(t, 5*time.Second, "lock release", func() bool {
			_, err := b.client.Enqueue(ctx, task, queue.Unique(time.Hour))
			return err == nil
		})
	})
}

func TestFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fast := func(int, error, *Task) time.Duration { return 10 * time.Millisecond }

	t.Run("RetriesThenDead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := newRecorder(func(ctx context.Context, task *Task) error {
			return fmt.Errorf("attempt %d failed", task.Attempt)
		})
		b.server(t, Config{RetryDelay: fast, ForwardInterval: 20 * time.Millisecond}, rec)
		info := b.enqueue(t, queue.NewRawTask("flaky", nil), queue.MaxRetry(2))
		waitFor(t, 10*time.Second, "dead", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead
		})
		ti, _ := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		if rec.count(info.ID) != 3 || ti.Attempts != 3 || ti.LastError != "attempt 3 failed" {
			t.Fatalf("ran %d times; task %+v", rec.count(info.ID), ti)
		}
		page, _ := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateDead})
		if len(page.Tasks) != 1 || page.Tasks[0].ID != info.ID {
			t.Fatalf("dead feed = %+v", page.Tasks)
		}
	})

	t.Run("RetryBackoffIsRecorded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.server(t, Config{}, HandlerFunc(func(ctx context.Context, task *Task) error { return errors.New("nope") }))
		info := b.enqueue(t, queue.NewRawTask("t", nil))
		waitFor(t, 5*time.Second, "retry state", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateRetry
		})
		ti, _ := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		// DefaultRetryDelay: 10s ±20% after the first attempt, from the
		// failure, both by the Redis server's clock
		if d := ti.NextProcessAt.Sub(ti.LastFailedAt); d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("retry due %v after the failure, want 10s ±20%%", d)
		}
	})

	// A task back in pending after a failed attempt is still found, with
	// its attempts and last error, while it waits in the list.
	t.Run("RetriedPendingTaskIsFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		s := b.server(t, Config{ForwardInterval: 20 * time.Millisecond}, HandlerFunc(func(ctx context.Context, task *Task) error {
			return RetryIn(100*time.Millisecond, errors.New("not yet"))
		}))
		info := b.enqueue(t, queue.NewRawTask("t", []byte("kept")))
		waitFor(t, 5*time.Second, "retry state", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateRetry
		})
		must(t, b.insp.Pause(ctx, queue.DefaultQueue))
		waitFor(t, 5*time.Second, "back in pending", func() bool {
			qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
			return qi.Pending == 1 && qi.Retry == 0
		})
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		if err != nil || ti.State != queue.StatePending || ti.Attempts < 1 || ti.LastError != "not yet (retry in 100ms)" ||
			string(ti.Payload) != "kept" {
			t.Fatalf("retried pending task: %+v, %v", ti, err)
		}
		_ = s
	})

	t.Run("SkipRetryGoesStraightToDead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := newRecorder(func(ctx context.Context, task *Task) error { return SkipRetry(errors.New("bad input")) })
		b.server(t, Config{}, rec)
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(10))
		waitFor(t, 5*time.Second, "dead", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead
		})
		if rec.count(info.ID) != 1 {
			t.Fatalf("ran %d times", rec.count(info.ID))
		}
	})

	t.Run("RetryInSetsTheDelay", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var first atomic.Int64
		rec := newRecorder(func(ctx context.Context, task *Task) error {
			if task.Attempt == 1 {
				first.Store(time.Now().UnixMilli())
				return RetryIn(300*time.Millisecond, errors.New("busy"))
			}
			return nil
		})
		b.server(t, Config{ForwardInterval: 20 * time.Millisecond}, rec)
		info := b.enqueue(t, queue.NewRawTask("t", nil))
		waitFor(t, 5*time.Second, "second attempt", func() bool { return rec.count(info.ID) == 2 })
		rec.mu.Lock()
		second := rec.tasks[1]
		rec.mu.Unlock()
		if second.Attempt != 2 {
			t.Fatalf("second run has attempt %d", second.Attempt)
		}
		if d := time.Since(time.UnixMilli(first.Load())); d < 300*time.Millisecond {
			t.Fatalf("retried after %v, before the 300ms asked for", d)
		}
	})

	t.Run("PanicIsAFailureWithStack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// a middleware sees the panic as a returned *PanicError, as a
		// logging or metrics middleware must
		seen := make(chan error, 1)
		watch := func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, task *Task) error {
				err := next.ProcessTask(ctx, task)
				seen <- err
				return err
			})
		}
		b.server(t, Config{Middleware: []Middleware{watch}}, HandlerFunc(func(ctx context.Context, task *Task) error { panic("kaboom") }))
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(0))
		select {
		case err := <-seen:
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != "kaboom" {
				t.Fatalf("the middleware saw %v, want the *PanicError", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the middleware's after-code never ran: the panic unwound past it")
		}
		waitFor(t, 5*time.Second, "dead", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead
		})
		ti, _ := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		if !strings.Contains(ti.LastError, "panic: kaboom") || !strings.Contains(ti.LastError, "server_test.go") {
			t.Fatalf("last error %q, want the panic and its stack", ti.LastError)
		}
	})

	// A middleware that panics fails the task like a handler that does:
	// the worker goes on.
	t.Run("MiddlewarePanicIsAFailure", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bad := func(Handler) Handler {
			return HandlerFunc(func(context.Context, *Task) error { panic("middleware kaboom") })
		}
		b.server(t, Config{Middleware: []Middleware{bad}}, HandlerFunc(func(context.Context, *Task) error { return nil }))
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(0))
		waitFor(t, 5*time.Second, "dead with the panic", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead && strings.Contains(ti.LastError, "panic: middleware kaboom")
		})
	})

	// A task nobody handles fails like any other, and the worker warns
	// once per type, so a deploy that forgot a handler shows in the log
	// without one line per task.
	t.Run("UnknownTypeIsRecordedAndWarnedOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var logs syncBuffer
		cfg := Config{}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		b.server(t, cfg, NewMux())
		var infos []*queue.TaskInfo
		for range 3 {
			infos = append(infos, b.enqueue(t, queue.NewRawTask("nobody:handles", nil)))
		}
		other := b.enqueue(t, queue.NewRawTask("nor:this", nil))
		for _, info := range append(infos, other) {
			waitFor(t, 5*time.Second, "retry", func() bool {
				ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
				return err == nil && ti.State == queue.StateRetry &&
					strings.Contains(ti.LastError, "no handler for task type")
			})
		}
		out := string(logs.Bytes())
		if n := strings.Count(out, "no handler for task type"); n != 2 {
			t.Fatalf("%d warnings for 4 tasks of 2 unhandled types, want 2:\n%s", n, out)
		}
		for _, want := range []string{"level=WARN", `type=nobody:handles`, `type=nor:this`, "queue=default"} {
			if !strings.Contains(out, want) {
				t.Fatalf("the warnings lack %q:\n%s", want, out)
			}
		}
	})

	// A raw JSON payload, as a producer outside Go (or one migrated from
	// a JSON-payload queue) sends it, decodes into the handler's type.
	t.Run("TypedReadsRawJSON", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got := make(chan greeting, 1)
		mux := NewMux()
		mux.Handle("greet", Typed(func(ctx context.Context, task *Task, g greeting) error { got <- g; return nil }))
		b.server(t, Config{}, mux)
		b.enqueue(t, queue.NewRawTask("greet", []byte(`{"Name":"ann"}`)))
		select {
		case g := <-got:
			if g.Name != "ann" {
				t.Fatalf("decoded %+v", g)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the handler never ran")
		}
	})

	t.Run("TypedDecodeFailureSkipsRetry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		mux := NewMux()
		mux.Handle("greet", Typed(func(ctx context.Context, task *Task, g greeting) error { return nil }))
		b.server(t, Config{}, mux)
		info := b.enqueue(t, queue.NewRawTask("greet", []byte("not msgpack")))
		waitFor(t, 5*time.Second, "dead", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead && strings.Contains(ti.LastError, "raw payload")
		})
	})

	// Messages pushed by a foreign client, malformed, truncated or empty,
	// go to dead with the decode error, flagged malformed, their bytes
	// kept, and GetTask finds each by the ID the dead feed (the
	// dashboard) shows; the worker goes on with the next task. (An empty
	// element once reached dead unflagged, without an error, and could not
	// be found: "" was taken for "no message".)
	t.Run("MalformedMessagesGoToDead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := newRecorder(nil)
		b.server(t, Config{}, rec)
		good := b.enqueue(t, queue.NewRawTask("t", []byte("fine")))
		raw, err := (&wire.Message{ID: "truncated", Type: "t", Payload: []byte("0123456789")}).Encode()
		must(t, err)
		// a compact message (a plain task's form) cut inside its type
		compact, err := (&wire.Message{ID: "compact-cut", Type: "type-name", MaxRetry: wire.CompactMaxRetry}).Encode()
		must(t, err)
		if compact[0] != 0x91 {
			t.Fatalf("a plain task's message opens with %#x, not the compact form's 0x91", compact[0])
		}
		shard := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0).ShardPrefix() + "0"
		pushed := []string{"garbage from elsewhere", string(raw[:len(raw)-8]), `{"json":1}`, "", string(compact[:len(compact)-3])}
		must(t, b.rdb.RPush(ctx, shard, "garbage from elsewhere", raw[:len(raw)-8], `{"json":1}`, "", compact[:len(compact)-3]).Err())
		after := b.enqueue(t, queue.NewRawTask("t", []byte("after")))
		// (a task between a blocking move and its claim is in a worker's
		// in-flight list, neither pending nor active: wait for the runs too)
		waitFor(t, 5*time.Second, "five dead tasks and the good ones run", func() bool {
			qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
			return qi.Dead == 5 && qi.Pending == 0 && qi.Active == 0 && rec.count(good.ID) == 1 && rec.count(after.ID) == 1
		})
		if rec.total() != 2 || rec.count(good.ID) != 1 || rec.count(after.ID) != 1 {
			t.Fatalf("handler ran %d tasks; want the two good ones once each", rec.total())
		}
		page, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateDead})
		must(t, err)
		if len(page.Tasks) != 5 {
			t.Fatalf("dead feed has %d tasks, want 5", len(page.Tasks))
		}
		truncated, compactCut := false, false
		kept := map[string]bool{}
		for _, ti := range page.Tasks {
			if !strings.Contains(ti.LastError, "undecodable task message") || !ti.Malformed || ti.State != queue.StateDead {
				t.Fatalf("dead task %s: malformed %v, state %s, last error %q", ti.ID, ti.Malformed, ti.State, ti.LastError)
			}
			got, err := b.insp.GetTask(ctx, queue.DefaultQueue, ti.ID)
			if err != nil || !got.Malformed || got.State != queue.StateDead || got.LastError != ti.LastError {
				t.Fatalf("GetTask(%q): %+v, %v", ti.ID, got, err)
			}
			// its head reads, so it is leased, and dies, under its own ID
			truncated = truncated || ti.ID == "truncated"
			compactCut = compactCut || ti.ID == "compact-cut"
			kept[string(got.Payload)] = true
		}
		if !truncated || !compactCut {
			t.Fatalf("dead tasks %+v: not each truncated message under its own ID", page.Tasks)
		}
		for _, p := range pushed {
			if !kept[p] {
				t.Errorf("the bytes of pushed element %q are not kept: %v", p, kept)
			}
		}
	})

	t.Run("SnoozeCostsNoAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// MaxRetry(0): had the snooze cost the attempt, the second run
		// would be attempt 2 and the task would end dead.
		var snoozedOnce atomic.Bool
		rec := newRecorder(func(ctx context.Context, task *Task) error {
			if task.Attempt != 1 {
				return fmt.Errorf("attempt %d after a snooze", task.Attempt)
			}
			if snoozedOnce.CompareAndSwap(false, true) {
				return Snooze(100 * time.Millisecond)
			}
			return nil
		})
		b.server(t, Config{ForwardInterval: 20 * time.Millisecond}, rec)
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(0))
		waitFor(t, 5*time.Second, "done", func() bool {
			_, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return errors.Is(err, queue.ErrNotFound) && rec.count(info.ID) == 2
		})
	})

	t.Run("SnoozedTaskWaitsScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var runs atomic.Int32
		rec := newRecorder(func(ctx context.Context, task *Task) error {
			if runs.Add(1) == 1 {
				return Snooze(time.Hour)
			}
			if task.Attempt != 1 {
				return fmt.Errorf("attempt %d after a snooze", task.Attempt)
			}
			return nil
		})
		b.server(t, Config{ForwardInterval: 20 * time.Millisecond}, rec)
		info := b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(0))
		// where the worker's HandlerEvent says it went: scheduled, not retry
		waitFor(t, 5*time.Second, "the snoozed task scheduled", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateScheduled
		})
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		if err != nil || qi.Scheduled != 1 || qi.Retry != 0 {
			t.Fatalf("QueueInfo after a snooze: %+v, %v; want 1 scheduled, 0 retry", qi, err)
		}
		page, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateScheduled})
		if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != info.ID {
			t.Fatalf("ListTasks(scheduled) after a snooze: %+v, %v", page, err)
		}
		// an operator's "run now" runs it at once, on its first attempt still
		if err := b.insp.RunTask(ctx, queue.DefaultQueue, info.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the task to run again and succeed", func() bool {
			_, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return errors.Is(err, queue.ErrNotFound) && rec.count(info.ID) == 2
		})
	})

	t.Run("ErrorHandlerSeesFailures", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		seen := make(chan error, 1)
		b.server(t, Config{ErrorHandler: func(ctx context.Context, task *Task, err error) { seen <- err }},
			HandlerFunc(func(ctx context.Context, task *Task) error { return errors.New("boom") }))
		b.enqueue(t, queue.NewRawTask("t", nil), queue.MaxRetry(0))
		select {
		case err := <-seen:
			if err.Error() != "boom" {
				t.Fatalf("error handler got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("error handler never called")
		}
	})
}
