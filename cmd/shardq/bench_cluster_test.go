package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// clusterBenchLine is one BENCH line of a --cluster run.
type clusterBenchLine struct {
	Name   string  `json:"figure"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Rounds int     `json:"rounds"`
}

// TestBenchCluster runs bench --cluster scaled down: both setups are in
// the tables of both sides (processing, and the enqueue from 64
// goroutines that filled the queue), with the ratio, a Redis CPU per task
// line for each of the 4 masters, tasks spread evenly, and a BENCH line
// for every figure.
func TestBenchCluster(t *testing.T) {
	t.Parallel()
	code, out, errOut := run(t, nil, "bench", "--cluster", "--tasks", "2000", "--rounds", "1")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"2000 tasks per run, no-op handler, concurrency 16, 6 partitions",
		"\n1 master ", "\n3 masters ",
		"ratio 3 masters / 1 master: ",
		"Redis CPU per task per master",
		"enqueue side: the same 2000 tasks per run enqueued before it by single Enqueue calls from 64 goroutines",
		"Redis CPU per enqueue per master",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	perMaster := regexp.MustCompile(`(?m)^(1 master|3 masters) +(\d) \(127\.0\.0\.1:\d+\) +([\d.]+)% +([\d.]+) +(\d+)$`)
	if got := perMaster.FindAllStringSubmatch(out, -1); len(got) != 8 {
		t.Errorf("%d per-master lines, want 8 (1 + 3, per side):\n%s", len(got), out)
	}
	for _, s := range []string{"1 master", "3 masters"} {
		if !strings.Contains(errOut, "round 1, "+s+": ") {
			t.Errorf("progress lacks round 1 of %s:\n%s", s, errOut)
		}
	}

	figs := map[string]clusterBenchLine{}
	for _, line := range strings.Split(out, "\n") {
		js, ok := strings.CutPrefix(line, "BENCH ")
		if !ok {
			continue
		}
		var f clusterBenchLine
		if err := json.Unmarshal([]byte(js), &f); err != nil {
			t.Fatalf("BENCH line is not JSON: %q: %v", line, err)
		}
		figs[f.Name] = f
	}
	want := []string{"cluster 3 masters / 1 master: tasks/s ratio", "cluster 3 masters / 1 master: enqueue tasks/s ratio"}
	for _, s := range []string{"1 master", "3 masters"} {
		want = append(want, "cluster "+s+": process, no-op handler", "cluster "+s+": Redis CPU per task, all masters", "cluster "+s+": client CPU per task",
			"cluster "+s+": Redis commands per task, all masters", "cluster "+s+": Redis socket reads per task, all masters")
		want = append(want, "cluster "+s+": enqueue, 64 producers", "cluster "+s+": Redis CPU per enqueue, all masters", "cluster "+s+": client CPU per enqueue",
			"cluster "+s+": Redis commands per enqueue, all masters", "cluster "+s+": Redis socket reads per enqueue, all masters")
	}
	want = append(want, "cluster 1 master: Redis CPU per task, master 1", "cluster 1 master: tasks served, master 1",
		"cluster 1 master: Redis CPU per enqueue, master 1", "cluster 1 master: tasks enqueued, master 1")
	for i := 1; i <= 3; i++ {
		want = append(want, fmt.Sprintf("cluster 3 masters: Redis CPU per task, master %d", i), fmt.Sprintf("cluster 3 masters: tasks served, master %d", i),
			fmt.Sprintf("cluster 3 masters: Redis CPU per enqueue, master %d", i), fmt.Sprintf("cluster 3 masters: tasks enqueued, master %d", i))
	}
	for _, name := range want {
		f, ok := figs[name]
		if !ok {
			t.Errorf("no BENCH line for %q", name)
			continue
		}
		if f.Value <= 0 || f.Rounds != 1 {
			t.Errorf("%q: value %v over %d rounds, want a measured one over 1", name, f.Value, f.Rounds)
		}
	}
	if len(figs) != len(want) {
		t.Errorf("%d BENCH lines, want %d:\n%s", len(figs), len(want), out)
	}
	// 6 partitions, 2 on each of the 3 masters, filled round-robin.
	if f := figs["cluster 1 master: tasks served, master 1"]; f.Value != 100 {
		t.Errorf("the lone master served %v%% of the tasks, want 100", f.Value)
	}
	for i := 1; i <= 3; i++ {
		if f := figs[fmt.Sprintf("cluster 3 masters: tasks served, master %d", i)]; f.Value < 33 || f.Value > 34 {
			t.Errorf("master %d of 3 served %v%% of the tasks, want a third", i, f.Value)
		}
		if f := figs[fmt.Sprintf("cluster 3 masters: tasks enqueued, master %d", i)]; f.Value < 33 || f.Value > 34 {
			t.Errorf("master %d of 3 took %v%% of the enqueues, want a third", i, f.Value)
		}
	}
}
