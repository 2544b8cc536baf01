package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestDoctorJSON runs shardq doctor --output json against a private
// redis-server: clean with tasks pending, then a dangling uniqueness lock
// found (exit 3), repaired (exit 0), and clean again.
func TestDoctorJSON(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ctx := context.Background()
	rdb := srv.Client(t)
	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := client.Enqueue(ctx, queue.NewRawTask("t", nil)); err != nil {
			t.Fatal(err)
		}
	}
	type report struct {
		Prefix     string `json:"prefix"`
		Queues     int    `json:"queues"`
		Violations int    `json:"violations"`
		Repaired   int    `json:"repaired"`
		Findings   []struct {
			Check    string   `json:"check"`
			Count    int      `json:"count"`
			Examples []string `json:"examples"`
			Repaired int      `json:"repaired"`
		} `json:"findings"`
	}
	doctor := func(wantCode int, args ...string) report {
		t.Helper()
		code, out, errOut := run(t, env, append([]string{"doctor", "--output", "json"}, args...)...)
		if code != wantCode {
			t.Fatalf("doctor %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, out, errOut)
		}
		var rep report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("doctor %v: %v in\n%s", args, err, out)
		}
		return rep
	}
	if rep := doctor(exitOK); rep.Violations != 0 || rep.Prefix != "shardq" || rep.Queues != 1 || len(rep.Findings) == 0 {
		t.Fatalf("clean: %+v", rep)
	}
	lock := keys.For("shardq", "default", 0).Unique("order-1")
	if err := rdb.Set(ctx, lock, "no-such-task", 0).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, env, "doctor")
	if code != exitViolations || !strings.Contains(out, "uniqueness-locks") || !strings.Contains(out, "1 found") || !strings.Contains(out, "no-such-task") {
		t.Fatalf("text: exit %d\n%s", code, out)
	}
	t.Logf("text output:\n%s", out)
	rep := doctor(exitViolations)
	found := false
	for _, f := range rep.Findings {
		if f.Check == "uniqueness-locks" && f.Count == 1 && len(f.Examples) == 1 {
			found = true
		}
	}
	if !found || rep.Violations != 1 {
		t.Fatalf("the lock: %+v", rep)
	}
	if rep := doctor(exitOK, "--repair"); rep.Violations != 1 || rep.Repaired != 1 {
		t.Fatalf("repair: %+v", rep)
	}
	if n, _ := rdb.Exists(ctx, lock).Result(); n != 0 {
		t.Fatalf("the lock is still there")
	}
	if rep := doctor(exitOK); rep.Violations != 0 {
		t.Fatalf("after the repair: %+v", rep)
	}
	if code, _, _ := run(t, env, "doctor", "--output", "yaml"); code != exitUsage {
		t.Fatalf("--output yaml: exit %d", code)
	}
}
