package main

import (
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
)

// TestEnqueueOptions: each task option flag reaches the task, as
// describe task --output json reads it back.
func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	f := &fixture{srv: srv, env: env}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	code, out, errOut := run(t, env, "enqueue", "--queue", "email", "--type", "t", "--payload", "x", "--id", "opt-1",
		"--group", "acme", "--retention", "1h", "--header", "trace=t1", "--header", "tenant=a",
		"--unique-by", "order-7", "--unique", "10m", "--at", at.Format(time.RFC3339), "--deadline", "3h",
		"--timeout", "30s", "--max-retry", "3")
	if code != exitOK || out != "opt-1 scheduled\n" {
		t.Fatalf("enqueue: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var ti taskJSON
	f.jsonOut(t, &ti, "describe", "task", "opt-1", "--queue", "email")
	if ti.Group != "acme" || ti.RetentionMS != time.Hour.Milliseconds() || ti.Headers["trace"] != "t1" ||
		ti.Headers["tenant"] != "a" || ti.UniqueBy != "order-7" || !ti.NextProcessAt.Equal(at) ||
		time.Until(ti.Deadline) < 170*time.Minute || ti.TimeoutMS != 30000 || ti.MaxRetry != 3 {
		t.Fatalf("got %+v", ti)
	}
	// the uniqueness ID holds: another payload with it is refused
	code, _, errOut = run(t, env, "enqueue", "--queue", "email", "--type", "t", "--payload", "other", "--group", "acme",
		"--unique-by", "order-7", "--unique", "10m")
	if code != exitFailure || !strings.Contains(errOut, `not enqueued: a task of uniqueness ID "order-7" is already in queue "email" (--unique 10m0s)`) {
		t.Fatalf("second order-7: exit %d, stderr %q", code, errOut)
	}
	// until finished: held while the task lives
	for i, want := range []int{exitOK, exitFailure} {
		code, _, errOut = run(t, env, "enqueue", "--queue", "email", "--type", "u", "--payload", "same", "--unique-until-finished", "0s")
		if code != want || (code == exitFailure && !strings.Contains(errOut, "(--unique-until-finished 0s)")) {
			t.Fatalf("--unique-until-finished, try %d: exit %d, want %d; stderr %q", i+1, code, want, errOut)
		}
	}
}

func TestEnqueueOptionsBadInput(t *testing.T) {
	t.Parallel()
	runBadInput(t, "enqueue", []badInput{
		{"Key", nil, []string{"--type", "t", "--key", "acme"}, exitUsage, "flag provided but not defined: -key (did you mean --group?)"},
		{"Header", nil, []string{"--type", "t", "--header", "nameonly"}, exitUsage, `--header "nameonly": want name=value`},
		{"UniqueByAlone", nil, []string{"--type", "t", "--unique-by", "o"}, exitUsage, `--unique-by "o" needs --unique TTL or --unique-until-finished`},
		{"At", nil, []string{"--type", "t", "--at", "tomorrow"}, exitUsage, `--at "tomorrow": want an RFC 3339 time`},
		{"AtAndDelay", nil, []string{"--type", "t", "--at", "2026-12-24T18:00:00Z", "--delay", "1h"}, exitUsage, "--delay and --at"},
		{"Deadline", nil, []string{"--type", "t", "--deadline", "-1h"}, exitUsage, `--deadline "-1h"`},
		{"Retention", nil, []string{"--type", "t", "--retention", "-1s"}, exitUsage, "--retention -1s: want >= 0"},
		{"Group", nil, []string{"--type", "t", "--group", "a b"}, exitUsage, `Group("a b")`},
		{"UniqueTwice", nil, []string{"--type", "t", "--unique", "1m", "--unique-until-finished", "0s"}, exitUsage, "pass one"},
	})
}
