package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

// checkFigures checks that out has a BENCH line with a measured value and
// a table row for each of want, no other BENCH line, and the targets of
// goals (figure -> target) on their figures and on no other.
func checkFigures(t *testing.T, out string, want []string, goals map[string]string) map[string]benchLine {
	t.Helper()
	figs := benchLines(t, out)
	for _, name := range want {
		f, ok := figs[name]
		if !ok {
			t.Errorf("no BENCH line for %q", name)
			continue
		}
		if f.Value <= 0 {
			t.Errorf("%q: value %v, want a measured one", name, f.Value)
		}
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("the table lacks %q", name)
		}
	}
	if len(figs) != len(want) {
		t.Errorf("%d BENCH lines, want %d:\n%s", len(figs), len(want), out)
	}
	for name, f := range figs {
		if f.Target != goals[name] || (goals[name] != "") != (f.Met != nil) {
			t.Errorf("%q: target %q, met %v; want target %q", name, f.Target, f.Met, goals[name])
		}
	}
	return figs
}

// waitFigures names the p50, p99 and max figures of one isolation setup,
// and sets the p99's target in goals.
func waitFigures(name string, goals map[string]string) []string {
	goals[name+", p99"] = "<= 50 ms"
	return []string{name + ", p50", name + ", p99", name + ", max"}
}

// TestBenchFair runs bench --fair, scaled down, against a Redis that also
// holds a user's key: every figure is measured, each target sits on its
// figure, the shares and ratios are ones a run can give, and the run
// deletes its own keys and nothing else.
func TestBenchFair(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	must(t, rdb.Set(ctx, "users:key", "mine", 0).Err())

	code, out, errOut := run(t, nil, "bench", "--fair", "--redis", "redis://"+srv.Addr,
		"--backlogs", "1000,2000", "--tasks", "2000", "--mem-tasks", "20000", "--rounds", "1")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	goals := map[string]string{
		"process, 10000 groups / plain queue":      ">= 0.8",
		"memory per pending task, grouped / plain": "<= 1.15",
	}
	var want []string
	for _, backlog := range []int{1000, 2000} {
		for _, lim := range []string{"no group limit", "GroupConcurrency 2"} {
			want = append(want, waitFigures(fmt.Sprintf("A %d waiting, %s: B's first start", backlog, lim), goals)...)
		}
	}
	want = append(want,
		"process, plain queue, concurrency 16", "process, tasks of 10000 groups, concurrency 16", "process, 10000 groups / plain queue",
		"memory per pending task, plain (100 B payload)", "memory per pending task, grouped, 10 groups (100 B payload)",
		"memory per pending task, grouped / plain", "memory per group with tasks waiting")
	for _, ms := range []int{0, 1, 10} {
		name := fmt.Sprintf("weights 3:1, %d ms handlers: heavy group's share of starts", ms)
		want = append(want, name)
		goals[name] = "0.75 ± 0.05"
	}
	figs := checkFigures(t, out, want, goals)

	for _, ms := range []int{0, 1, 10} {
		// the heavy group cannot have every start, nor fewer than the light
		if v := figs[fmt.Sprintf("weights 3:1, %d ms handlers: heavy group's share of starts", ms)].Value; v <= 0.5 || v >= 1 {
			t.Errorf("%d ms handlers: heavy group's share %.3f, want between 0.5 and 1", ms, v)
		}
	}
	// a grouped task carries its group, so costs at least a plain one
	if r := figs["memory per pending task, grouped / plain"].Value; r < 1 {
		t.Errorf("grouped / plain memory %.3f: a group costs nothing?", r)
	}
	if !strings.Contains(out, "note: fewer tasks than the defaults") {
		t.Errorf("a scaled-down run does not say its targets do not apply:\n%s", out)
	}
	for _, step := range []string{"isolation", "groups", "memory", "weights"} {
		if !strings.Contains(errOut, step+" ...") {
			t.Errorf("progress lacks the %q step:\n%s", step, errOut)
		}
	}
	keys := rdb.Keys(ctx, "*").Val()
	if len(keys) != 1 || keys[0] != "users:key" || rdb.Get(ctx, "users:key").Val() != "mine" {
		t.Errorf("after the run the keys are %q, want only the user's", keys)
	}
}

// TestBenchFairCluster runs bench --fair --cluster, scaled down: the wait
// is measured for each placement of B's group against A's on a private
// 3-master cluster, and nothing else.
func TestBenchFairCluster(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, nil, "bench", "--fair", "--cluster", "--backlogs", "1000", "--rounds", "1")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	goals := map[string]string{}
	var want []string
	for _, lim := range []string{"no group limit", "GroupConcurrency 2"} {
		for _, place := range []string{placeSamePartition, placeSameMaster, placeOtherMaster} {
			want = append(want, waitFigures(fmt.Sprintf("cluster 3 masters, A 1000 waiting, %s, B's group in %s: B's first start", lim, place), goals)...)
		}
	}
	checkFigures(t, out, want, goals)
	if !strings.Contains(errOut, "started a private 3-master Redis Cluster") {
		t.Errorf("stderr does not say a cluster was started:\n%s", errOut)
	}
}
