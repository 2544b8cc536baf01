package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// enqueued parses "ID STATE" lines.
func enqueued(t *testing.T, out string) [][2]string {
	t.Helper()
	var got [][2]string
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("output line %q, want ID STATE", l)
		}
		got = append(got, [2]string{f[0], f[1]})
	}
	return got
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	insp := inspector(t, srv)
	ctx := context.Background()
	enqueue := func(t *testing.T, args ...string) (id, state string) {
		t.Helper()
		code, out, errOut := run(t, env, append([]string{"enqueue"}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
		}
		got := enqueued(t, out)
		if len(got) != 1 {
			t.Fatalf("output %q, want one line", out)
		}
		return got[0][0], got[0][1]
	}

	t.Run("Raw", func(t *testing.T) {
		t.Parallel()
		id, state := enqueue(t, "--type", "greet", "--payload", "hello", "--max-retry", "3", "--timeout", "1m")
		ti, err := insp.GetTask(ctx, "default", id)
		if err != nil || state != "pending" || !ti.Raw || string(ti.Payload) != "hello" || ti.MaxRetry != 3 || ti.Timeout != time.Minute {
			t.Fatalf("state %s, task %+v, %v", state, ti, err)
		}
	})
	t.Run("JSONForTypedHandlers", func(t *testing.T) {
		t.Parallel()
		id, _ := enqueue(t, "--queue", "email", "--type", "email:send", "--json",
			"--payload", `{"To": "ann@example.com", "Retries": 3, "Score": 0.5, "Tags": ["a", "b"]}`)
		ti, err := insp.GetTask(ctx, "email", id)
		if err != nil || !ti.Raw {
			t.Fatalf("task %+v, %v", ti, err)
		}
		var v struct {
			To      string
			Retries int
			Score   float64
			Tags    []string
		}
		if err := ti.Decode(&v); err != nil || v.To != "ann@example.com" || v.Retries != 3 || v.Score != 0.5 || len(v.Tags) != 2 {
			t.Fatalf("decoded %+v, %v", v, err)
		}
	})
	t.Run("Delay", func(t *testing.T) {
		t.Parallel()
		id, state := enqueue(t, "--type", "later", "--payload", "", "--delay", "1h")
		ti, err := insp.GetTask(ctx, "default", id)
		if err != nil || state != "scheduled" || time.Until(ti.NextProcessAt) < 59*time.Minute {
			t.Fatalf("state %s, task %+v, %v", state, ti, err)
		}
	})
	t.Run("File", func(t *testing.T) {
		t.Parallel()
		id, _ := enqueue(t, "--type", "doc", "--file", writeFile(t, "p", "line 1\nline 2\n"))
		ti, err := insp.GetTask(ctx, "default", id)
		if err != nil || string(ti.Payload) != "line 1\nline 2\n" {
			t.Fatalf("task %+v, %v", ti, err)
		}
	})
	t.Run("DuplicateID", func(t *testing.T) {
		t.Parallel()
		if id, _ := enqueue(t, "--type", "x", "--payload", "1", "--id", "order-42"); id != "order-42" {
			t.Fatalf("ID %q", id)
		}
		code, out, errOut := run(t, env, "enqueue", "--type", "x", "--payload", "2", "--id", "order-42")
		if code != exitFailure || out != "" || !strings.Contains(errOut, `not enqueued: task ID "order-42" was already enqueued to queue "default" (IDs stay claimed for 24h); that task is pending`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("DuplicateUnique", func(t *testing.T) {
		t.Parallel()
		enqueue(t, "--type", "report", "--payload", "may", "--unique", "1h")
		enqueue(t, "--type", "report", "--payload", "june", "--unique", "1h")
		code, _, errOut := run(t, env, "enqueue", "--type", "report", "--payload", "may", "--unique", "1h")
		if code != exitFailure || !strings.Contains(errOut, `a "report" task with the same payload is already in queue "default"`) {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestEnqueueStdin reads the payload from stdin; it swaps os.Stdin, so it
// does not run in parallel.
func TestEnqueueStdin(t *testing.T) {
	srv := redistest.Start(t)
	f, err := os.Open(writeFile(t, "stdin", `{"N": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	code, out, errOut := run(t, redisEnv(srv), "enqueue", "--type", "t", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
	}
	ti, err := inspector(t, srv).GetTask(context.Background(), "default", enqueued(t, out)[0][0])
	var v struct{ N int }
	if err != nil || ti.Decode(&v) != nil || v.N != 1 {
		t.Fatalf("task %+v, %v", ti, err)
	}
}

func TestEnqueueLines(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	var in strings.Builder
	const n = 1234
	for i := range n {
		fmt.Fprintf(&in, `{"I": %d}`+"\n", i)
		if i == 10 {
			in.WriteString("\n") // skipped
		}
	}
	code, out, errOut := run(t, redisEnv(srv), "enqueue", "--type", "n", "--json", "--lines", "--queue", "bulk",
		"--file", writeFile(t, "lines", in.String()))
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
	}
	got := enqueued(t, out)
	if len(got) != n {
		t.Fatalf("%d tasks printed, want %d", len(got), n)
	}
	qi, err := insp.QueueInfo(context.Background(), "bulk")
	if err != nil || qi.Pending != n {
		t.Fatalf("queue %+v, %v", qi, err)
	}
	// in input order
	ti, err := insp.GetTask(context.Background(), "bulk", got[n-1][0])
	var v struct{ I int }
	if err != nil || ti.Decode(&v) != nil || v.I != n-1 {
		t.Fatalf("last task %+v (%v), payload %+v", ti, err, v)
	}

	t.Run("Rejected", func(t *testing.T) {
		t.Parallel()
		lines := "{\"a\": 1}\nnot json\n{\"a\": 1}\n{\"a\": 2}\n"
		code, out, errOut := run(t, redisEnv(srv), "enqueue", "--type", "u", "--json", "--lines", "--unique", "1h",
			"--file", writeFile(t, "lines", lines))
		if code != exitFailure || len(enqueued(t, out)) != 2 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		for _, want := range []string{"line 2: not enqueued: invalid JSON", `line 3: not enqueued: a "u" task with the same payload`, "2 of 4 lines not enqueued"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
	})
}

func TestEnqueueBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	runBadInput(t, "enqueue", []badInput{
		{"UnknownFlag", env, []string{"--type", "t", "--prio", "1"}, exitUsage, "flag provided but not defined: -prio"},
		{"NoType", env, []string{"--payload", "x"}, exitUsage, "--type is required"},
		{"QueueName", env, []string{"--type", "t", "--payload", "x", "--queue", "{bad}"}, exitUsage, "invalid queue name"},
		{"MaxRetry", env, []string{"--type", "t", "--payload", "x", "--max-retry", "-1"}, exitUsage, "MaxRetry(-1)"},
		{"BadID", env, []string{"--type", "t", "--payload", "x", "--id", "has space"}, exitUsage, "invalid task"},
		{"JSON", env, []string{"--type", "t", "--json", "--payload", "{nope"}, exitUsage, "invalid JSON"},
		{"JSONTwoValues", env, []string{"--type", "t", "--json", "--payload", "1 2"}, exitUsage, "more than one value"},
		{"IDWithLines", env, []string{"--type", "t", "--lines", "--id", "x"}, exitUsage, "--id names one task"},
		{"PayloadWithLines", env, []string{"--type", "t", "--lines", "--payload", "x"}, exitUsage, "cannot be used with --lines"},
		{"MissingFile", env, []string{"--type", "t", "--file", "/nonexistent/payload"}, exitUsage, "no such file"},
		{"Arguments", env, []string{"--type", "t", "payload"}, exitUsage, "unexpected arguments"},
		{"Prefix", env, []string{"--type", "t", "--payload", "x", "--prefix", "a{b}"}, exitUsage, "--prefix"},
		{"NoRedis", nil, []string{"--type", "t", "--payload", "x"}, exitUsage, "no Redis"},
		{"RedisDown", downEnv(t), []string{"--type", "t", "--payload", "x"}, exitFailure, "connect to 127.0.0.1"},
	})
	if code, out, _ := run(t, nil, "enqueue", "-h"); code != exitOK || !strings.Contains(out, "Exit codes:") {
		t.Fatalf("enqueue -h: exit %d, stdout %q", code, out)
	}
}

// TestEnqueueLinesRedisGone: Redis dies while lines stream in; the command
// stops with exit 1 and says from which line nothing is known enqueued,
// so a rerun can resume there.
func TestEnqueueLinesRedisGone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	fifo := filepath.Join(t.TempDir(), "lines")
	must(t, syscall.Mkfifo(fifo, 0o600))
	p := startShardq(t, redisEnv(srv), "enqueue", "--type", "t", "--lines", "--file", fifo)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)
	defer w.Close()
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i+1)
	}
	waitUntil(t, 10*time.Second, "100 tasks enqueued", func() bool {
		qi, err := insp.QueueInfo(context.Background(), "default")
		return err == nil && qi.Pending == 100
	})
	srv.KillHoldingPort(t) // no other test's server answers on its port
	for i := 100; i < 150; i++ {
		fmt.Fprintf(w, "line %d\n", i+1)
	}
	w.Close()
	select {
	case code := <-p.done:
		p.done <- code
		if errOut := p.err.String(); code != exitFailure || !strings.Contains(errOut, "after 100 tasks enqueued, from line 101 on not enqueued") {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("enqueue --lines did not stop after Redis died")
	}
}

// TestEnqueueWarnsOfEviction: like workers, the producer warns when Redis
// may evict keys, which loses tasks; a noeviction Redis gets no warning.
func TestEnqueueWarnsOfEviction(t *testing.T) {
	t.Parallel()
	lru := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	code, _, errOut := run(t, redisEnv(lru), "enqueue", "--type", "t", "--payload", "x")
	if code != exitOK || !strings.Contains(errOut, "maxmemory-policy is allkeys-lru, not noeviction") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	safe := redistest.Start(t)
	if code, _, errOut := run(t, redisEnv(safe), "enqueue", "--type", "t", "--payload", "x"); code != exitOK || errOut != "" {
		t.Fatalf("noeviction: exit %d, stderr %q", code, errOut)
	}
}

// TestEnqueueFullQueue: a queue at its MaxDepth refuses the task with a
// message that says so and what to do; --wait waits for room, and gives
// up when none comes.
func TestEnqueueFullQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	insp := inspector(t, srv)
	ctx := context.Background()
	if err := insp.SetLimits(ctx, "small", queue.Limits{MaxDepth: 1}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, env, "enqueue", "--queue", "small", "--type", "x", "--payload", "1"); code != exitOK {
		t.Fatalf("first task: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := run(t, env, "enqueue", "--queue", "small", "--type", "x", "--payload", "2")
	if code != exitFailure || out != "" || !strings.Contains(errOut, `not enqueued: queue "small" is full (at its MaxDepth): retry later, pass --wait`) {
		t.Fatalf("full queue: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, env, "enqueue", "--queue", "small", "--type", "x", "--payload", "3", "--wait", "300ms")
	if code != exitFailure || !strings.Contains(errOut, `queue "small" is full (at its MaxDepth) and no room came within --wait 300ms`) || strings.Contains(errOut, "deadline") {
		t.Fatalf("full queue with --wait: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, env, "enqueue", "--queue", "small", "--type", "x", "--lines", "--file", writeFile(t, "l", "a\nb\n"))
	if code != exitFailure || !strings.Contains(errOut, `line 1: not enqueued: queue "small" is full`) || !strings.Contains(errOut, "2 of 2 lines not enqueued") {
		t.Fatalf("full queue with --lines: exit %d, stderr %q", code, errOut)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := insp.DeleteAllTasks(ctx, "small", queue.StatePending); err != nil {
			t.Error(err)
		}
	}()
	code, out, errOut = run(t, env, "enqueue", "--queue", "small", "--type", "x", "--payload", "4", "--wait", "1m")
	if code != exitOK || len(enqueued(t, out)) != 1 {
		t.Fatalf("--wait with room made: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := run(t, env, "enqueue", "--type", "x", "--payload", "1", "--wait", "-1s"); code != exitUsage || !strings.Contains(errOut, "cannot be negative") {
		t.Fatalf("--wait -1s: exit %d, stderr %q", code, errOut)
	}
}

// TestEnqueueWaitEndsATry: when --wait runs out while a try is on its way
// (the library reports the context's cause, errWaitedForRoom, or the
// connection's deadline), the message still says the queue was full, and
// that the task may be enqueued after all. A run of TestEnqueueFullQueue
// met this by chance and printed the library's raw error.
func TestEnqueueWaitEndsATry(t *testing.T) {
	t.Parallel()
	e := &enqueuer{f: enqueueFlags{queue: "small", wait: 300 * time.Millisecond}}
	for _, cause := range []error{errWaitedForRoom, context.DeadlineExceeded} {
		err := fmt.Errorf("waiting for room in %q, a try's outcome is unknown: %w", "small", fmt.Errorf("enqueue %q: %w", "small", cause))
		got := e.explain(err).Error()
		if !strings.Contains(got, `queue "small" is full (at its MaxDepth) and no room came within --wait 300ms`) || !strings.Contains(got, "may be enqueued after all") {
			t.Errorf("cause %v: %q", cause, got)
		}
	}
}
