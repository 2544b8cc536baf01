package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// docSections are the sections of docs/cli.md whose examples
// TestCLIDocExamples runs, in the order they appear.
var docSections = []string{"enqueue", "stats", "get", "describe", "run", "delete", "cancel", "pause and resume",
	"weight", "delete-queue"}

// TestCLIDocExamples runs every shardq command line of the examples of
// docSections, as written, in order, against a Redis holding what they
// name: a worker on queue "email" that fails email:send tasks with "smtp
// timeout" and runs report tasks until the test ends, dead tasks,
// scheduled tasks reminder-7 and reminder-8, running task report-42,
// queue old-email, and a workflow of one node, fetch, whose ID replaces
// <workflow-id>.
// Each must exit 0. Lines with a pipe are left out.
func TestCLIDocExamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	insp := inspector(t, srv)
	release := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("email:send", func(context.Context, *worker.Task) error { return errors.New("smtp timeout") })
	mux.HandleFunc("report", func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	})
	cfg := worker.Config{Queues: map[string]int{"email": 1}, Concurrency: 8, Lease: 3 * time.Second,
		RetryDelay: func(int, error, *worker.Task) time.Duration { return time.Hour }}
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
	for id, o := range map[string][]queue.Option{
		"bounce-1":   {queue.MaxRetry(0)},
		"bounce-2":   {queue.MaxRetry(0)},
		"reminder-7": {queue.ProcessIn(time.Hour)},
		"reminder-8": {queue.ProcessIn(time.Hour)},
	} {
		if _, err := client.Enqueue(ctx, queue.NewRawTask("email:send", nil), append(o, queue.In("email"), queue.TaskID(id))...); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range []struct{ id, q string }{{"report-42", "email"}, {"old-1", "old-email"}} {
		if _, err := client.Enqueue(ctx, queue.NewRawTask("report", nil), queue.In(task.q), queue.TaskID(task.id)); err != nil {
			t.Fatal(err)
		}
	}
	flow := queue.NewWorkflow()
	flow.Add("fetch", queue.NewRawTask("step", nil, queue.In("chain")))
	wf, err := client.EnqueueWorkflow(ctx, flow)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, insp, "email", "bounce-2", queue.StateDead)
	waitState(t, insp, "email", "report-42", queue.StateActive)

	lines := docExamples(t)
	if len(lines) < 30 {
		t.Fatalf("found %d example lines in docs/cli.md: have its sections moved?", len(lines))
	}
	for _, l := range lines {
		args, err := splitArgs(strings.ReplaceAll(l, "<workflow-id>", wf))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		code, out, errOut := run(t, env, args[1:]...)
		if code != exitOK {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", l, code, out, errOut)
		}
		fits(t, l, out)
	}
}

// docExamples returns the shardq command lines of the sh blocks of
// docSections in docs/cli.md.
func docExamples(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	section, inBlock := "", false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
		case l == "```sh":
			inBlock = true
		case l == "```":
			inBlock = false
		case inBlock && strings.HasPrefix(l, "shardq ") && !strings.Contains(l, "|"):
			for _, s := range docSections {
				if s == section {
					out = append(out, l)
				}
			}
		}
	}
	return out
}
