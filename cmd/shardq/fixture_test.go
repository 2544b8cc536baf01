package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// fixture is a private Redis holding what the CLI reads and acts on.
// Queue "email" holds, with no worker: pending tasks p-1 and p-2 of group
// "acme" and p-3 of none (a JSON payload, a header), and scheduled s-1.
// With a worker, queue "work" holds dead d-1 (error "boom: timeout"),
// retrying r-1, active a-1 (running until the test ends) and succeeded
// ok-1; the worker runs the schedule "nightly"; and workflow wf is a
// chain of two tasks in queue "chain", which no worker serves.
type fixture struct {
	srv    *redistest.Server
	env    map[string]string
	client *queue.Client
	insp   *queue.Inspector
	wf     string
}

func newFixture(t *testing.T, withWorker bool) *fixture {
	t.Helper()
	ctx := context.Background()
	srv := redistest.Start(t)
	f := &fixture{srv: srv, env: redisEnv(srv), insp: inspector(t, srv)}
	var err error
	if f.client, err = queue.NewClient(srv.Client(t), queue.Config{}); err != nil {
		t.Fatal(err)
	}
	enqueue := func(id, typ, payload string, opts ...queue.Option) {
		t.Helper()
		if _, err := f.client.Enqueue(ctx, queue.NewRawTask(typ, []byte(payload)), append(opts, queue.TaskID(id))...); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
	}
	enqueue("p-1", "email:send", "a", queue.In("email"), queue.Group("acme"))
	enqueue("p-2", "email:send", "b", queue.In("email"), queue.Group("acme"))
	enqueue("p-3", "report", `{"day":"monday"}`, queue.In("email"), queue.Headers(map[string]string{"trace": "t1"}))
	enqueue("s-1", "email:send", "c", queue.In("email"), queue.ProcessIn(time.Hour))
	if !withWorker {
		return f
	}
	release := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("fail", func(context.Context, *worker.Task) error { return errors.New("boom: timeout") })
	mux.HandleFunc("block", func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	})
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	cfg := worker.Config{Queues: map[string]int{"work": 1}, Concurrency: 4, Lease: 3 * time.Second, // a cancel within a 1s heartbeat
		RetryDelay: func(int, error, *worker.Task) time.Duration { return time.Hour },
		Schedules: []worker.Schedule{{Name: "nightly", Spec: "@every 1h", Task: queue.NewRawTask("report", nil),
			Options: []queue.Option{queue.In("email")}}}}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := worker.NewServer(srv.Client(t), cfg, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release)
		_ = w.Shutdown(context.Background())
	})
	enqueue("d-1", "fail", "d", queue.In("work"), queue.MaxRetry(0))
	enqueue("r-1", "fail", "r", queue.In("work"), queue.MaxRetry(5))
	enqueue("a-1", "block", "a", queue.In("work"))
	enqueue("ok-1", "ok", "o", queue.In("work"), queue.Retention(time.Hour))
	for id, st := range map[string]queue.State{"d-1": queue.StateDead, "r-1": queue.StateRetry,
		"a-1": queue.StateActive, "ok-1": queue.StateSucceeded} {
		waitState(t, f.insp, "work", id, st)
	}
	if f.wf, err = f.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("step", nil, queue.In("chain")),
		queue.NewRawTask("step", nil, queue.In("chain")))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the schedule and the worker's heartbeat", func() bool {
		s, _ := f.insp.Schedules(ctx)
		ws, _ := f.insp.Workers(ctx)
		return len(s) == 1 && len(ws) == 1 && len(ws[0].Tasks) == 1
	})
	return f
}

// jsonOut runs shardq with args and --output json against f, and decodes
// its stdout into v; it fails the test unless shardq exits 0.
func (f *fixture) jsonOut(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errOut := run(t, f.env, append(args, "--output", "json")...)
	if code != exitOK {
		t.Fatalf("shardq %s: exit %d\nstderr: %s", strings.Join(args, " "), code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("shardq %s: %v in:\n%s", strings.Join(args, " "), err, out)
	}
}

// fits fails the test when a line of out is wider than an 80-column
// terminal.
func fits(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > termWidth {
			t.Errorf("%s: a line of %d columns, over %d:\n%s", what, n, termWidth, out)
		}
	}
}
