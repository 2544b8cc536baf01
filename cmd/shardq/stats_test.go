package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

func TestStats(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ctx := context.Background()

	code, out, errOut := run(t, env, "stats")
	if code != exitFailure || out != "" || !strings.Contains(errOut, `no queues under key prefix "shardq", nor under any other prefix`) {
		t.Fatalf("no queues: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []*queue.Task
	for range 12 {
		tasks = append(tasks, queue.NewRawTask("t", nil))
	}
	if _, err := client.EnqueueMany(ctx, tasks, queue.In("email")); err != nil {
		t.Fatal(err)
	}
	if _, err := client.EnqueueMany(ctx, tasks[:3], queue.In("a-very-long-queue-name"), queue.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := inspector(t, srv).Pause(ctx, "email"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // some latency

	t.Run("Table", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := run(t, env, "stats")
		if code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
		}
		fits(t, "stats", out)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 5 || lines[4] != "Paused: email." {
			t.Fatalf("want a header, two queues, a total and the paused queue:\n%s", out)
		}
		// aligned: every column ends at the same offset on every line
		for _, col := range []string{"PENDING", "SCHEDULED", "SUCCEEDED"} {
			end := strings.Index(lines[0], col) + len(col)
			for _, l := range lines[1:4] {
				l := strings.ReplaceAll(l, "…", ".") // one column, three bytes
				if end > len(l) || l[end-1] == ' ' || (end < len(l) && l[end] != ' ') {
					t.Errorf("column %s is not aligned:\n%s", col, out)
				}
			}
		}
		f := strings.Fields(lines[2])
		if f[0] != "email" || f[1] != "12" || f[3] != "0" || f[8] == "-" {
			t.Errorf("email line %q", lines[2])
		}
		// a name too long for 80 columns is cut, and says so
		f = strings.Fields(lines[1])
		if !strings.HasPrefix("a-very-long-queue-name", strings.TrimSuffix(f[0], "…")) || !strings.HasSuffix(f[0], "…") ||
			f[1] != "0" || f[3] != "3" || f[8] != "-" {
			t.Errorf("scheduled line %q", lines[1])
		}
		if f := strings.Fields(lines[3]); f[0] != "(all)" || f[1] != "12" || f[3] != "3" {
			t.Errorf("total line %q", lines[3])
		}
	})
	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := run(t, env, "stats", "--output", "json", "--queue", "email")
		if code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
		}
		var got []queueStats
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if len(got) != 1 || got[0].Queue != "email" || got[0].Pending != 12 || !got[0].Paused || got[0].LatencyMS < 20 || got[0].Partitions != 1 {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("UnknownQueue", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := run(t, env, "stats", "--queue", "nope")
		if code != exitFailure || !strings.Contains(errOut, `no queue "nope"; the queues are: a-very-long-queue-name, email`) {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestPrefix: enqueue and stats under another key prefix see each other
// and nothing of the default prefix, where stats says so and names the
// prefix that has queues.
func TestPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	if code, _, errOut := run(t, env, "enqueue", "--prefix", "myapp", "--queue", "mine", "--type", "t", "--payload", "x"); code != exitOK {
		t.Fatalf("enqueue: exit %d, %s", code, errOut)
	}
	if code, out, errOut := run(t, env, "stats", "--prefix", "myapp", "--json"); code != exitOK || !strings.Contains(out, `"queue": "mine"`) {
		t.Fatalf("stats --prefix: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "stats", "--json"); code != exitFailure || out != "" ||
		!strings.Contains(errOut, `no queues under key prefix "shardq"; prefixes with queues: myapp`) {
		t.Fatalf("stats: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
}

func TestStatsBadInput(t *testing.T) {
	t.Parallel()
	empty := redistest.Start(t)
	runBadInput(t, "stats", []badInput{
		{"NoQueueYet", redisEnv(empty), []string{"--queue", "nope"}, exitFailure, `no queues under key prefix "shardq", nor under any other`},
		{"BadPort", nil, []string{"--redis", "redis://127.0.0.1:78310"}, exitUsage, `port "78310", want 1..65535`},
		{"URLPasswordHidden", nil, []string{"--redis", "redis://:s3cret@127.0.0.1:1/abc"}, exitUsage, `"redis://:xxxxx@127.0.0.1:1/abc"`},
		{"UnknownFlag", nil, []string{"--all"}, exitUsage, "flag provided but not defined: -all"},
		{"QueueName", nil, []string{"--queue", "a b"}, exitUsage, "invalid queue name"},
		{"Prefix", nil, []string{"--prefix", "a b"}, exitUsage, "--prefix"},
		{"NoRedis", nil, nil, exitUsage, "no Redis"},
		{"RedisDown", downEnv(t), nil, exitFailure, "connect to 127.0.0.1"},
		{"Help", nil, []string{"-h"}, exitOK, "latency_ms"},
	})
}

// TestTLSToPlainPort: rediss:// against a Redis without TLS gets no
// answer; the command gives up after its connect timeout and says what
// to check, rather than hanging through every dial retry.
func TestTLSToPlainPort(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }, connectTimeout: 500 * time.Millisecond}
	start := time.Now()
	code := m.Run(context.Background(), []string{"stats", "--redis", "rediss://" + srv.Addr})
	if code != exitFailure || !strings.Contains(errOut.String(), "no answer within 500ms; rediss:// asks for TLS") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("gave up after %v, want about the 500ms connect timeout", d)
	}
}
