package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

// benchLine is one BENCH line of a run's output.
type benchLine struct {
	Name      string  `json:"figure"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Limit     float64 `json:"limit"`
	LimitName string  `json:"limit_name"`
	Ratio     float64 `json:"ratio"`
	Target    string  `json:"target"`
	Met       *bool   `json:"met"`
}

// benchLines parses the BENCH lines of a run's output.
func benchLines(t *testing.T, out string) map[string]benchLine {
	t.Helper()
	figs := map[string]benchLine{}
	for _, line := range strings.Split(out, "\n") {
		js, ok := strings.CutPrefix(line, "BENCH ")
		if !ok {
			continue
		}
		var f benchLine
		if err := json.Unmarshal([]byte(js), &f); err != nil {
			t.Fatalf("BENCH line is not JSON: %q: %v", line, err)
		}
		figs[f.Name] = f
	}
	return figs
}

// TestBench runs the README's bench command, scaled down, against a Redis
// that also holds a user's key: every figure is in the table and in a
// BENCH line with a measured value, progress goes to stderr, and the run
// deletes its own keys and nothing else.
func TestBench(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	must(t, rdb.Set(ctx, "users:key", "mine", 0).Err())

	code, out, errOut := run(t, nil, "bench", "--redis", "redis://"+srv.Addr, "--tasks", "2000", "--mem-tasks", "2000")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	figs := benchLines(t, out)
	want := []string{
		"redis: EVALSHA unpipelined", "redis: EVALSHA unpipelined, slowest probe", "redis: EVALSHA unpipelined, fastest probe",
		"redis: EVALSHA pipelined (500)", "redis: RPUSH pipelined (500)",
		"redis: LPOP pipelined (500)", "redis: memory per list item",
		"Enqueue, 1 producer(s)", "Enqueue, 16 producer(s)", "EnqueueMany (1000 per call)",
		"process, no-op handler, concurrency 16", "process, no-op handler, concurrency 64",
		"CPU per task: Redis", "CPU per task: client", "CPU per task: Redis + client",
		"latency steady 2000/s, p50", "latency steady 2000/s, p99", "latency steady 2000/s, max",
		"latency steady 2000/s, achieved rate", "latency steady 2000/s, late beats",
		"latency after 2s idle, p50", "latency after 2s idle, p99", "latency after 2s idle, max",
		"memory per pending task (100 B payload)",
	}
	for _, name := range want {
		f, ok := figs[name]
		if !ok {
			t.Errorf("no BENCH line for %q", name)
			continue
		}
		if f.Value <= 0 && !(name == "latency steady 2000/s, late beats" && f.Value == 0) {
			t.Errorf("%q: value %v, want a measured one", name, f.Value)
		}
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("the table lacks %q", name)
		}
		if !strings.Contains(errOut, name) {
			t.Errorf("progress on stderr lacks %q", name)
		}
	}
	if len(figs) != len(want) {
		t.Errorf("%d BENCH lines, want %d:\n%s", len(figs), len(want), out)
	}
	// The targets, each on its figure, checked, and compared to a
	// limit; no other figure has one.
	targets := map[string]string{
		"Enqueue, 1 producer(s)": ">= 50% of limit", "EnqueueMany (1000 per call)": ">= 200000",
		"process, no-op handler, concurrency 16": ">= 50000", "CPU per task: Redis + client": "<= 20",
		"latency steady 2000/s, p99": "<= 2ms", "latency after 2s idle, max": "<= 5ms",
		"memory per pending task (100 B payload)": "<= 160",
	}
	met := 0
	for name, f := range figs {
		want := targets[name]
		if f.Target != want || (want != "") != (f.Met != nil) {
			t.Errorf("%q: target %q, met %v; want target %q", name, f.Target, f.Met, want)
		}
		if want != "" && (f.Limit <= 0 || f.LimitName == "" || f.Ratio <= 0) {
			t.Errorf("%q: limit %v %q ratio %v; a target's figure compares to a limit", name, f.Limit, f.LimitName, f.Ratio)
		}
		if f.Met != nil && *f.Met {
			met++
		}
	}
	if want := fmt.Sprintf("targets met: %d of 7", met); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, `"target":">= 50000"`) {
		t.Errorf("BENCH lines escape the targets:\n%s", out)
	}
	if !strings.Contains(out, "note: fewer tasks than the defaults") {
		t.Errorf("a scaled-down run does not say its targets do not apply:\n%s", out)
	}
	// A 100-byte payload plus its record costs more than the payload.
	if m := figs["memory per pending task (100 B payload)"].Value; m < 100 {
		t.Errorf("memory per pending task %.1f B: less than the payload", m)
	}
	for _, part := range benchParts {
		if !strings.Contains(errOut, part+" ...") {
			t.Errorf("progress lacks the %q part:\n%s", part, errOut)
		}
	}

	keys := rdb.Keys(ctx, "*").Val()
	if len(keys) != 1 || keys[0] != "users:key" || rdb.Get(ctx, "users:key").Val() != "mine" {
		t.Errorf("after the run the keys are %q, want only the user's", keys)
	}
}

// TestBenchLimitProbes: the limit is probed before every part and after
// the last, and the ratios divide by the probes' median.
func TestBenchLimitProbes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	code, out, errOut := run(t, nil, "bench", "--redis", "redis://"+srv.Addr, "--only", "enqueue,memory", "--mem-tasks", "1000")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// the first probe, then one after each of the two parts
	if n := strings.Count(errOut, "limit probe "); n != 3 {
		t.Errorf("%d limit probes, want 3:\n%s", n, errOut)
	}
	figs := benchLines(t, out)
	med := figs["redis: EVALSHA unpipelined"]
	lo, hi := figs["redis: EVALSHA unpipelined, slowest probe"], figs["redis: EVALSHA unpipelined, fastest probe"]
	if med.LimitName != "median of 3 probes" || med.Value < lo.Value || med.Value > hi.Value {
		t.Errorf("median %+v, slowest %v, fastest %v", med, lo.Value, hi.Value)
	}
	if e := figs["Enqueue, 1 producer(s)"]; e.Limit != med.Value {
		t.Errorf("Enqueue's limit %v, want the probes' median %v", e.Limit, med.Value)
	}
}

// TestExactlyOnce checks the processing run's check on each way to fail.
func TestExactlyOnce(t *testing.T) {
	t.Parallel()
	counts := make([]atomic.Int32, 3)
	for i := range counts {
		counts[i].Store(1)
	}
	if err := exactlyOnce(counts, 0, 0); err != nil {
		t.Fatalf("every task once: %v", err)
	}
	for _, c := range []struct {
		name          string
		set           int32
		foreign, left int64
		want          string
	}{
		{"Twice", 2, 0, 0, "task 1 ran 2 times"},
		{"Never", 0, 0, 0, "task 1 ran 0 times"},
		{"Foreign", 1, 1, 0, "1 handler calls for tasks the run did not enqueue"},
		{"Left", 1, 0, 2, "2 tasks left pending"},
	} {
		counts[1].Store(c.set)
		err := exactlyOnce(counts, c.foreign, c.left)
		if !errors.Is(err, errBenchCheck) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want errBenchCheck saying %q", c.name, err, c.want)
		}
	}
}

// TestBenchOnly runs one part: the limit is measured first, as every
// ratio needs it, and nothing else runs.
func TestBenchOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	code, out, errOut := run(t, nil, "bench", "--redis", "redis://"+srv.Addr, "--only", "memory", "--mem-tasks", "1000")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	figs := benchLines(t, out)
	if _, ok := figs["redis: EVALSHA unpipelined"]; !ok {
		t.Error("--only memory did not measure the limit")
	}
	if f, ok := figs["memory per pending task (100 B payload)"]; !ok || f.Limit <= 0 {
		t.Errorf("--only memory: memory figure %+v (present %v), want one with its limit", f, ok)
	}
	for name := range figs {
		if !strings.HasPrefix(name, "redis: ") && !strings.HasPrefix(name, "memory ") {
			t.Errorf("--only memory ran %q", name)
		}
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("the run left %d keys", n)
	}
}

// TestBenchTimeout: a run stopped by --timeout says so, stops its worker
// and deletes the keys it made.
func TestBenchTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	code, _, errOut := run(t, nil, "bench", "--redis", "redis://"+srv.Addr, "--only", "latency", "--timeout", "1500ms")
	if code != exitFailure || !strings.Contains(errOut, "stopped by --timeout 1.5s: context deadline exceeded") {
		t.Fatalf("exit %d, want %d with the deadline; stderr:\n%s", code, exitFailure, errOut)
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("the stopped run left %d keys", n)
	}
}

func TestBenchBadInput(t *testing.T) {
	t.Parallel()
	runBadInput(t, "bench", []badInput{
		{"UnknownPart", nil, []string{"--only", "process,nope"}, exitUsage, `unknown part "nope"`},
		{"FewTasks", nil, []string{"--tasks", "10"}, exitUsage, "at least 1000"},
		{"NegativePayload", nil, []string{"--payload", "-1"}, exitUsage, "--payload -1: want at least 1000, 1000 and 0"},
		{"BadURL", nil, []string{"--redis", "http://nope"}, exitUsage, "--redis"},
		{"RedisDown", downEnv(t), nil, exitFailure, "connect to 127.0.0.1:1"},
		{"Help", nil, []string{"-h"}, exitOK, "-mem-tasks"},
		{"HelpCluster", nil, []string{"-h"}, exitOK, "-cluster"},
		{"ClusterWithRedis", nil, []string{"--cluster", "--redis", "redis://127.0.0.1:1"}, exitUsage, "--redis does not apply to --cluster"},
		{"ClusterWithOnly", nil, []string{"--cluster", "--only", "process"}, exitUsage, "--only does not apply to --cluster"},
		{"ClusterNoRounds", nil, []string{"--cluster", "--rounds", "0"}, exitUsage, "--rounds 0: want at least 1"},
		{"RoundsWithoutCluster", nil, []string{"--rounds", "2"}, exitUsage, "--rounds applies to --cluster or --fair only"},
		{"PartitionsWithoutCluster", nil, []string{"--partitions", "3"}, exitUsage, "--partitions applies to --cluster only"},
		{"FairWithOnly", nil, []string{"--fair", "--only", "process"}, exitUsage, "--only does not apply to --fair"},
		{"FairWithPartitions", nil, []string{"--fair", "--partitions", "3"}, exitUsage, "--partitions does not apply to --fair"},
		{"FairClusterWithRedis", nil, []string{"--fair", "--cluster", "--redis", "redis://127.0.0.1:1"}, exitUsage, "no --redis or --mem-tasks"},
		{"FairNoRounds", nil, []string{"--fair", "--rounds", "0"}, exitUsage, "--rounds 0: want at least 1"},
		{"FairSmallBacklog", nil, []string{"--fair", "--backlogs", "10000,999"}, exitUsage, `--backlogs: "999": want task counts of at least 1000`},
		{"FairBadBacklog", nil, []string{"--fair", "--backlogs", "10k"}, exitUsage, `--backlogs: "10k"`},
		{"BacklogsWithoutFair", nil, []string{"--backlogs", "1000"}, exitUsage, "--backlogs applies to --fair only"},
		{"HelpFair", nil, []string{"-h"}, exitOK, "-backlogs"},
		{"ClusterFewPartitions", nil, []string{"--cluster", "--partitions", "2"}, exitUsage, "--partitions 2: want 3..1024"},
	})
}

// TestGoal checks the target arithmetic on both sides of each bound.
func TestGoal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		g    *goal
		f    figure
		want bool
	}{
		{atLeast(200_000, false, ""), figure{Value: 200_000}, true},
		{atLeast(200_000, false, ""), figure{Value: 199_999}, false},
		{atMost(20, false, ""), figure{Value: 20}, true},
		{atMost(20, false, ""), figure{Value: 20.1}, false},
		{atLeast(0.5, true, ""), figure{Value: 9_000, Limit: 18_000}, true},
		{atLeast(0.5, true, ""), figure{Value: 8_999, Limit: 18_000}, false},
		{&goal{bound: 0.75, within: 0.05}, figure{Value: 0.70}, true},
		{&goal{bound: 0.75, within: 0.05}, figure{Value: 0.80}, true},
		{&goal{bound: 0.75, within: 0.05}, figure{Value: 0.69}, false},
		{&goal{bound: 0.75, within: 0.05}, figure{Value: 0.81}, false},
	}
	for _, c := range cases {
		if got := c.g.met(c.f); got != c.want {
			t.Errorf("%+v on %+v: met %v, want %v", *c.g, c.f, got, c.want)
		}
	}
}
