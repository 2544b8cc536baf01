package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// run runs shardq in-process with env and returns its exit code and output.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}
	// a bound against a hang, not a speed test: the scaled-down bench run
	// took over a minute at a load average of 20 on two cores
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := m.Run(ctx, args)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	t.Parallel()
	if code, out, _ := run(t, nil); code != exitUsage || !strings.Contains(out, "demo") {
		t.Fatalf("no arguments: exit %d, output %q", code, out)
	}
	if code, out, _ := run(t, nil, "help"); code != exitOK || !strings.Contains(out, "Commands:") {
		t.Fatalf("help: exit %d, output %q", code, out)
	}
	if code, _, errOut := run(t, nil, "nope"); code != exitUsage || !strings.Contains(errOut, `unknown command "nope"`) {
		t.Fatalf("unknown command: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := run(t, nil, "demo", "-h"); code != exitOK || !strings.Contains(out, "-tasks") || errOut != "" {
		t.Fatalf("demo -h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run(t, nil, "help", "bench"); code != exitOK || !strings.Contains(out, "-mem-tasks") || errOut != "" {
		t.Fatalf("help bench: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := run(t, nil, "help", "nope"); code != exitUsage || !strings.Contains(errOut, `unknown command "nope"`) {
		t.Fatalf("help nope: exit %d, stderr %q", code, errOut)
	}
	for _, arg := range []string{"version", "--version"} {
		if code, out, _ := run(t, nil, arg); code != exitOK || !strings.HasPrefix(out, "shardq "+shardq.Version) || !strings.Contains(out, "go1.") {
			t.Fatalf("%s: exit %d, output %q", arg, code, out)
		}
	}
	if code, _, errOut := run(t, nil, "demo", "-tasks", "x"); code != exitUsage || !strings.Contains(errOut, "invalid value") {
		t.Fatalf("bad flag: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, nil, "demo", "-tasks", "0"); code != exitUsage || !strings.Contains(errOut, "at least 1") {
		t.Fatalf("-tasks 0: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, nil, "demo", "--redis", "http://nope"); code != exitUsage || !strings.Contains(errOut, "--redis") {
		t.Fatalf("bad URL: exit %d, stderr %q", code, errOut)
	}
}

// TestUsageErrors: for every command, help goes to stdout (so it pipes
// into less or grep), and a bad flag or value is one line on stderr naming
// it and the help command, exit 2. (It was the error, the whole usage,
// then the error again, all on stderr.)
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range (&Main{}).commands() {
		name := c.name()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}} {
				code, out, errOut := run(t, nil, args...)
				if code != exitOK || !strings.HasPrefix(out, "Usage: shardq "+name) || !strings.Contains(out, "Flags:") || errOut != "" {
					t.Errorf("%q: exit %d, stdout %q, stderr %q; want the help on stdout", args, code, out, errOut)
				}
			}
			hint := "(run 'shardq help " + name + "')"
			for _, bad := range []struct {
				args []string
				want string
			}{
				{[]string{"--bogus"}, "-bogus"},
				{[]string{"--redis"}, "-redis"}, // a flag without its value
				{[]string{"--redis", "redis://127.0.0.1:1", "stray"}, `"stray"`},
			} {
				code, out, errOut := run(t, nil, append([]string{name}, bad.args...)...)
				if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 ||
					!strings.Contains(errOut, bad.want) || !strings.Contains(errOut, hint) {
					t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s and %s",
						bad.args, code, out, errOut, bad.want, hint)
				}
			}
		})
	}
	code, _, errOut := run(t, nil, "enqueue", "--type", "t", "--delay", "banana")
	if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `invalid value "banana" for flag -delay`) {
		t.Errorf("--delay banana: exit %d, stderr %q", code, errOut)
	}
}

// TestDemo runs the README's run command against a Redis given by
// REDIS_URL: every task ends succeeded or dead, progress is shown, and the demo
// leaves no key behind.
func TestDemo(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	succeededSeen := make(chan int64, 1)
	go func() { // while the demo runs: its succeeded tasks are kept, for the dashboard
		ctx := context.Background()
		var most int64
		var insp *queue.Inspector
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && most < 398; time.Sleep(20 * time.Millisecond) {
			if insp == nil { // the demo's prefix is its own: find it
				keys, _, _ := rdb.Scan(ctx, 0, "{shardq-demo-*", 10).Result()
				if len(keys) == 0 {
					continue
				}
				prefix, _, _ := strings.Cut(strings.TrimPrefix(keys[0], "{"), ":")
				insp, _ = queue.NewInspector(rdb, queue.Config{Prefix: prefix})
			}
			if qi, err := insp.QueueInfo(ctx, queue.DefaultQueue); err == nil {
				most = max(most, qi.Succeeded)
			}
		}
		succeededSeen <- most
	}()
	code, out, errOut := run(t, map[string]string{"REDIS_URL": "redis://" + srv.Addr}, "demo", "-tasks", "400", "-work", "0", "-exit")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"dashboard on http://127.0.0.1:", "key prefix shardq-demo-", "enqueued 400 tasks", "pending", "tasks/s", "all 400 tasks finished", "398 succeeded, 2 dead"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "stale") || strings.Contains(errOut, "ERROR") {
		t.Errorf("the demo logged trouble:\n%s", errOut)
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("the demo left %d keys", n)
	}
	if most := <-succeededSeen; most != 398 {
		t.Errorf("the queue held at most %d succeeded tasks during the demo, want all 398 kept", most)
	}
}

// TestDemoPrivateRedis: with no Redis URL the demo starts its own
// redis-server and stops it on exit.
func TestDemoPrivateRedis(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, nil, "demo", "-tasks", "50", "-work", "0", "-workers", "1", "-exit")
	if code != exitOK || !strings.Contains(out, "started a private redis-server") || !strings.Contains(out, "all 50 tasks finished") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestDemoStaysUp: without --exit the demo keeps its dashboard answering
// after the tasks finish (it once stopped 2.5s later), prints a stats
// command that works when pasted, and stops, deleting its keys, at Ctrl-C.
func TestDemoStaysUp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := map[string]string{"REDIS_URL": "redis://" + srv.Addr}
	p := startShardq(t, env, "demo", "-tasks", "50", "-work", "0", "-workers", "1")
	waitUntil(t, 30*time.Second, "the demo to say it stays up", func() bool {
		return strings.Contains(p.stdout.String(), "inspect its queues from another terminal:")
	})
	out := p.stdout.String()
	_, rest, _ := strings.Cut(out, "dashboard on ")
	dashURL, _, _ := strings.Cut(rest, "\n")
	_, rest, _ = strings.Cut(out, "inspect its queues from another terminal:\n")
	cmdLine, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	fields := strings.Fields(cmdLine)
	if len(fields) < 2 || fields[0] != "shardq" || fields[1] != "stats" {
		t.Fatalf("stats command %q in:\n%s", cmdLine, out)
	}
	time.Sleep(3 * time.Second) // past the 2.5s after which it once stopped
	resp, err := http.Get(dashURL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard %s after the tasks finished: %v %v", dashURL, resp, err)
	}
	resp.Body.Close()
	// the printed command, pasted (the binary in-process)
	code, stats, errOut := run(t, nil, fields[1:]...)
	if code != exitOK || !strings.Contains(stats, "default") || !strings.Contains(stats, "50") {
		t.Fatalf("%s: exit %d\n%s%s", cmdLine, code, stats, errOut)
	}
	if code := p.stop(t); code != exitOK {
		t.Fatalf("demo exit %d after Ctrl-C\n%s", code, p.err.String())
	}
	if _, err := http.Get(dashURL); err == nil {
		t.Fatal("the dashboard still answers after the demo stopped")
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("the demo left %d keys", n)
	}
}
