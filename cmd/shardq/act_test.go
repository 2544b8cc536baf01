package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestRun runs tasks by ID and by query, reading --output json.
func TestRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	var r actionResult
	f.jsonOut(t, &r, "run", "--queue", "email", "s-1")
	if r.Action != "run" || r.Count != 1 {
		t.Fatalf("run s-1: %+v", r)
	}
	waitState(t, f.insp, "email", "s-1", queue.StatePending)

	// by query: without --yes it only counts, and exits 2
	code, out, errOut := run(t, f.env, "run", "--queue", "work", "--state", "dead", "--error", "boom")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `would run 1 dead task of queue "work": pass --yes`) {
		t.Fatalf("no --yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	f.jsonOut(t, &r, "run", "--queue", "work", "--state", "dead", "--error", "nomatch", "--dry-run")
	if r.Count != 0 || !r.DryRun || r.Action != "run-all" {
		t.Fatalf("dry run of no match: %+v", r)
	}
	f.jsonOut(t, &r, "run", "--queue", "work", "--state", "dead", "--error", "boom", "--yes")
	if r.Count != 1 || r.DryRun {
		t.Fatalf("run dead: %+v", r)
	}
	// d-1 runs again, fails again and goes back to dead (MaxRetry 0)
	waitUntil(t, 15*time.Second, "d-1's second attempt", func() bool {
		ti, err := f.insp.GetTask(context.Background(), "work", "d-1")
		return err == nil && ti.State == queue.StateDead && ti.Attempts == 2
	})
	f.jsonOut(t, &r, "run", "--queue", "work", "--state", "retry", "--yes")
	if r.Count != 1 {
		t.Fatalf("run every retrying task: %+v", r)
	}
	code, _, errOut = run(t, f.env, "run", "--queue", "work", "ok-1", "nope")
	if code != exitFailure || !strings.Contains(errOut, "task ok-1: ") || !strings.Contains(errOut, "task nope: ") {
		t.Fatalf("a succeeded and an unknown task: exit %d, stderr %q", code, errOut)
	}
}

// TestDelete deletes tasks by ID, by group, and purges a state.
func TestDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	var r actionResult
	f.jsonOut(t, &r, "delete", "--queue", "email", "--state", "pending", "--group", "acme", "--dry-run")
	if r.Count != 2 || !r.DryRun || r.Group != "acme" {
		t.Fatalf("dry run: %+v", r)
	}
	var capped actionResult
	f.jsonOut(t, &capped, "delete", "--queue", "email", "--state", "pending", "--group", "acme", "--max", "1", "--dry-run")
	if capped.Count != 1 || !capped.AtLeast {
		t.Fatalf("dry run with --max 1: %+v", capped)
	}
	f.jsonOut(t, &r, "delete", "--queue", "email", "--state", "pending", "--group", "acme", "--yes")
	if r.Count != 2 {
		t.Fatalf("delete group acme: %+v", r)
	}
	f.jsonOut(t, &r, "delete", "--queue", "email", "s-1")
	if r.Count != 1 {
		t.Fatalf("delete s-1: %+v", r)
	}
	f.jsonOut(t, &r, "delete", "--queue", "email", "--state", "pending", "--yes") // purge
	if r.Count != 1 || r.Action != "delete-all" {
		t.Fatalf("purge: %+v", r)
	}
	qi, err := f.insp.QueueInfo(context.Background(), "email")
	if err != nil || qi.Pending != 0 || qi.Scheduled != 0 {
		t.Fatalf("after deleting every task: %+v, %v", qi, err)
	}
}

// TestCancel cancels a running task and a workflow.
func TestCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	var r actionResult
	f.jsonOut(t, &r, "cancel", "--queue", "work", "a-1")
	if r.Action != "cancel" || r.Count != 1 {
		t.Fatalf("cancel a-1: %+v", r)
	}
	waitState(t, f.insp, "work", "a-1", queue.StateDead) // cancelled: an error sends it to dead
	f.jsonOut(t, &r, "cancel", "--workflow", f.wf)
	if r.Action != "cancel-workflow" || r.Workflow != f.wf {
		t.Fatalf("cancel workflow: %+v", r)
	}
	w, err := f.insp.WorkflowSummary(context.Background(), f.wf)
	if err != nil || w.State != queue.StateCancelled {
		t.Fatalf("workflow after cancel: %+v, %v", w, err)
	}
	code, _, errOut := run(t, f.env, "cancel", "--queue", "email", "p-1")
	if code != exitFailure || !strings.Contains(errOut, "task p-1: ") {
		t.Fatalf("cancel a pending task: exit %d, stderr %q", code, errOut)
	}
}

// TestPauseResume pauses and resumes a queue and a group.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	var r actionResult
	var q queueDescription
	var g groupJSON
	f.jsonOut(t, &r, "pause", "--queue", "email")
	if f.jsonOut(t, &q, "describe", "queue", "email"); r.Action != "pause" || !q.Paused {
		t.Fatalf("pause: %+v, queue %+v", r, q)
	}
	f.jsonOut(t, &r, "resume", "--queue", "email")
	if f.jsonOut(t, &q, "describe", "queue", "email"); r.Action != "resume" || q.Paused {
		t.Fatalf("resume: %+v, queue %+v", r, q)
	}
	f.jsonOut(t, &r, "pause", "--queue", "email", "--group", "acme")
	if f.jsonOut(t, &g, "describe", "group", "acme", "--queue", "email"); r.Action != "pause-group" || !g.Paused {
		t.Fatalf("pause group: %+v, group %+v", r, g)
	}
	f.jsonOut(t, &r, "resume", "--queue", "email", "--group", "acme")
	if f.jsonOut(t, &g, "describe", "group", "acme", "--queue", "email"); r.Action != "resume-group" || g.Paused {
		t.Fatalf("resume group: %+v, group %+v", r, g)
	}
	code, _, errOut := run(t, f.env, "pause", "--queue", "emial")
	if code != exitFailure || !strings.Contains(errOut, `no queue "emial" under prefix "shardq"; its queues are: email`) {
		t.Fatalf("pause a mistyped queue: exit %d, stderr %q", code, errOut)
	}
}

// TestWeight sets and shows a group's weight.
func TestWeight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	var g groupJSON
	f.jsonOut(t, &g, "weight", "--queue", "email", "--group", "acme", "--set", "3")
	if g.Weight != 3 {
		t.Fatalf("set: %+v", g)
	}
	code, out, _ := run(t, f.env, "weight", "--queue", "email", "--group", "acme")
	if code != exitOK || out != "email acme 3\n" {
		t.Fatalf("show: exit %d, %q", code, out)
	}
	runBadInput(t, "weight", []badInput{
		{"TooHeavy", nil, []string{"--queue", "q", "--group", "g", "--set", "1001"}, exitUsage, "--set 1001, want 1..1000"},
		{"NoGroup", nil, []string{"--queue", "q"}, exitUsage, "--group is required"},
	})
}

// TestDeleteQueue counts, refuses a queue with tasks without --force,
// and deletes it.
func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	var r actionResult
	f.jsonOut(t, &r, "delete-queue", "--queue", "email", "--dry-run")
	if r.Count != 4 || !r.DryRun {
		t.Fatalf("dry run: %+v", r)
	}
	code, _, errOut := run(t, f.env, "delete-queue", "--queue", "email", "--yes")
	if code != exitFailure || !strings.Contains(errOut, "delete with force") {
		t.Fatalf("without --force: exit %d, stderr %q", code, errOut)
	}
	f.jsonOut(t, &r, "delete-queue", "--queue", "email", "--yes", "--force")
	if r.Count != 4 || r.DryRun {
		t.Fatalf("delete: %+v", r)
	}
	// the prefix has no queue left: a read says so
	code, _, errOut = run(t, f.env, "get", "queues")
	if code != exitFailure || !strings.Contains(errOut, `no queues under key prefix "shardq"`) {
		t.Fatalf("get queues after: exit %d, stderr %q", code, errOut)
	}
}

func TestActionsBadInput(t *testing.T) {
	t.Parallel()
	runBadInput(t, "run", []badInput{
		{"NoTasks", nil, []string{"--queue", "q"}, exitUsage, "name the tasks to run by ID"},
		{"IDsAndState", nil, []string{"--queue", "q", "--state", "dead", "x"}, exitUsage, "not both"},
		{"StateRunDoesNotTake", nil, []string{"--queue", "q", "--state", "pending", "--yes"}, exitUsage, `--state "pending": run takes scheduled, retry, dead`},
		{"FilterWithoutState", nil, []string{"--queue", "q", "--type", "t", "x"}, exitUsage, "go with --state"},
		{"YesAndDryRun", nil, []string{"--queue", "q", "--state", "dead", "--yes", "--dry-run"}, exitUsage, "contradict"},
	})
	runBadInput(t, "cancel", []badInput{
		{"Nothing", nil, nil, exitUsage, "name the running tasks to cancel"},
		{"WorkflowAndIDs", nil, []string{"--workflow", "w", "x"}, exitUsage, "takes no --queue or task IDs"},
	})
	runBadInput(t, "delete-queue", []badInput{
		{"NoQueue", nil, nil, exitUsage, "--queue is required"},
	})
}
