package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// benchCommand measures shardq against the Redis it is pointed at, or a
// private one, and against that Redis's own limit on this machine.
type benchCommand struct{}

func (*benchCommand) name() string { return "bench" }
func (*benchCommand) summary() string {
	return "measure enqueue, processing, latency, memory and CPU per task, each against Redis's own limit here"
}

const benchDetails = `
Without --cluster: one run against --redis, or a private redis-server,
measuring Redis's own limits first and every figure against them (enqueue,
processing, latency, memory), with the targets each is checked against.
Processing figures count only when every task ran exactly once.

With --cluster: on two private Redis Clusters started for it, of 1 master
and of 3, each queue's partitions spread evenly over the masters, the
setups interleaved in every round, the enqueue side (the queue filled by
single Enqueue calls from 64 goroutines) and then the processing run
(no-op handler). For each side it prints per setup tasks/s (median,
min-max), the ratio of 3 masters to 1 within each round, Redis CPU per
task per master (each master's CPU over the tasks it took or served) with
the rate one busy master core would allow, and how the tasks spread. Where the masters share few cores with each other and
the client, the wall-clock ratio understates scaling; the CPU per task per
master is what projects to more masters.

With --fair: fair queues. Group A's backlog waits (--backlogs), then group B
enqueues 20 tasks, 30 times, each time under a new group: B's first start
after its enqueue, p50, p99 and max, with no group limit and with a
GroupConcurrency of 2. Then, on one server, processing of --tasks tasks
spread over 10,000 groups against a plain queue, in turns over --rounds;
memory per pending task, grouped against plain, and per group; and the share
of starts of a group of weight 3 against one of weight 1. With --cluster as
well, the wait alone, on a private 3-master cluster, B's group in A's
partition, in another partition of A's master, and on another master.

A table goes to stdout, then one "BENCH {json}" line per figure; progress
goes to stderr.`

const benchExitCodes = `Exit codes:
  0  measured
  1  Redis failed, a processing run failed its exactly-once check (nothing
     printed), or --timeout
  2  bad flags`

// The run's sizes the targets are stated for.
const (
	defaultBenchTasks    = 100_000
	defaultBenchMemTasks = 1_000_000
)

// benchParts are the parts of a run, in the order they run.
var benchParts = []string{"limit", "enqueue", "process", "latency", "memory"}

type benchFlags struct {
	redisURL   string
	tasks      int
	memTasks   int
	payload    int
	only       string
	timeout    time.Duration
	cluster    bool
	rounds     int
	partitions int
	fair       bool
	backlogs   string
}

// figure is one measured result.
type figure struct {
	Name  string  `json:"figure"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Limit is the Redis limit the figure compares to (same unit), 0 = none.
	Limit     float64 `json:"limit,omitempty"`
	LimitName string  `json:"limit_name,omitempty"`
	// limitOf names a limit known only at the end of the run (the median
	// of the probes): "evalsha" or "rtt"; report fills Limit from it.
	limitOf string
	// Goal is the target the figure is checked against, nil = none.
	Goal *goal `json:"-"`
}

// goal is a target: the figure, or its ratio of the limit, at least or at
// most a bound.
type goal struct {
	atMost  bool
	bound   float64
	ofLimit bool
	// within, when set, makes the goal a band: the figure at most within
	// away from bound.
	within float64
	text   string // as the table shows it
}

// value is f's value as the table shows it: a ratio or a share to three
// places, where one place would hide whether it met a band like 0.75 ± 0.05.
func (f figure) value() string {
	if f.Unit == "x" || f.Unit == "share" {
		return fmt.Sprintf("%.3f", f.Value)
	}
	return fmt.Sprintf("%.1f", f.Value)
}

func atLeast(bound float64, ofLimit bool, text string) *goal {
	return &goal{bound: bound, ofLimit: ofLimit, text: text}
}

func atMost(bound float64, ofLimit bool, text string) *goal {
	return &goal{atMost: true, bound: bound, ofLimit: ofLimit, text: text}
}

// met reports whether f meets the goal.
func (g *goal) met(f figure) bool {
	v := f.Value
	if g.ofLimit {
		v = f.ratio()
	}
	if g.within > 0 {
		// a share of exactly 0.70 is 0.05 from 0.75 in decimal, not in binary
		return math.Abs(v-g.bound) <= g.within+1e-9
	}
	if g.atMost {
		return v <= g.bound
	}
	return v >= g.bound
}

func (f figure) ratio() float64 {
	if f.Limit == 0 {
		return 0
	}
	return f.Value / f.Limit
}

func (c *benchCommand) run(ctx context.Context, m *Main, args []string) error {
	var f benchFlags
	fs := m.flagSet(c)
	fs.StringVar(&f.redisURL, "redis", "", redisFlagHelp+"; without one, a private redis-server")
	fs.IntVar(&f.tasks, "tasks", defaultBenchTasks, "tasks for the processing runs, at least 1000")
	fs.IntVar(&f.memTasks, "mem-tasks", defaultBenchMemTasks, "pending tasks for the memory figure, at least 1000")
	fs.IntVar(&f.payload, "payload", 100, "payload bytes per task")
	fs.StringVar(&f.only, "only", "", "comma-separated parts to run: limit,enqueue,process,latency,memory (default all; limit always runs, first, as every ratio needs it)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "stop the whole run after this long")
	fs.BoolVar(&f.cluster, "cluster", false, fmt.Sprintf("instead: --tasks enqueued from 64 goroutines, then processed (concurrency %d, --partitions), on private Redis Clusters of 1 and of 3 masters, interleaved over --rounds; for each side tasks/s, their ratio and Redis CPU per task per master", clusterConcurrency))
	fs.IntVar(&f.rounds, "rounds", 3, "with --cluster or --fair: rounds, each running every setup once")
	fs.BoolVar(&f.fair, "fair", false, "instead: fair queues: group B's wait behind group A's --backlogs, with and without a group limit; with --cluster that alone, on a private 3-master cluster, B's group placed three ways; else also processing over 10,000 groups against a plain queue (--tasks, --rounds), memory per task and per group (--mem-tasks), and weights 3:1")
	fs.StringVar(&f.backlogs, "backlogs", "10000,100000,1000000", "with --fair: group A's backlogs, comma-separated")
	fs.IntVar(&f.partitions, "partitions", defaultClusterPartitions, fmt.Sprintf("with --cluster: the queue's partitions, %d..%d (at least one per master)", slices.Max(clusterSetups), maxBenchPartitions))
	describe(fs, c, "[flags]", benchDetails, benchExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.tasks < 1000 || f.memTasks < 1000 || f.payload < 0 {
		return fmt.Errorf("%w: --tasks %d, --mem-tasks %d, --payload %d: want at least 1000, 1000 and 0", errUsage, f.tasks, f.memTasks, f.payload)
	}
	set := visited(fs)
	if f.fair {
		for _, name := range []string{"only", "partitions"} {
			if set[name] {
				return fmt.Errorf("%w: --%s does not apply to --fair", errUsage, name)
			}
		}
		if f.cluster && (set["redis"] || set["mem-tasks"]) {
			return fmt.Errorf("%w: --fair --cluster starts its own cluster and measures the wait only: no --redis or --mem-tasks", errUsage)
		}
		if f.rounds < 1 {
			return fmt.Errorf("%w: --rounds %d: want at least 1", errUsage, f.rounds)
		}
		backlogs, err := parseBacklogs(f.backlogs)
		if err != nil {
			return err
		}
		return c.runFair(ctx, m, f, backlogs)
	}
	if set["backlogs"] {
		return fmt.Errorf("%w: --backlogs applies to --fair only", errUsage)
	}
	if f.cluster {
		// The clusters are private: a given Redis, or parts of the
		// single-server run, would measure something else.
		for _, name := range []string{"redis", "only", "mem-tasks"} {
			if set[name] {
				return fmt.Errorf("%w: --%s does not apply to --cluster, which starts its own clusters and runs the enqueue side and the processing only", errUsage, name)
			}
		}
		if f.rounds < 1 {
			return fmt.Errorf("%w: --rounds %d: want at least 1", errUsage, f.rounds)
		}
		if lo := slices.Max(clusterSetups); f.partitions < lo || f.partitions > maxBenchPartitions {
			return fmt.Errorf("%w: --partitions %d: want %d..%d, at least one per master", errUsage, f.partitions, lo, maxBenchPartitions)
		}
		return c.runCluster(ctx, m, f)
	}
	if set["rounds"] {
		return fmt.Errorf("%w: --rounds applies to --cluster or --fair only", errUsage)
	}
	if set["partitions"] {
		return fmt.Errorf("%w: --partitions applies to --cluster only", errUsage)
	}
	for _, p := range strings.Split(f.only, ",") {
		if p = strings.TrimSpace(p); f.only != "" && !slices.Contains(benchParts, p) {
			return fmt.Errorf("%w: --only: unknown part %q (parts: %s)", errUsage, p, strings.Join(benchParts, ","))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rdb, closeRedis, err := m.connect(ctx, f.redisURL, true, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	b := &bench{m: m, f: f, rdb: rdb, cfg: queue.Config{Prefix: "shardq-bench-" + wire.Nonce()}}
	defer b.cleanup()
	return b.run(ctx)
}

type bench struct {
	m       *Main
	f       benchFlags
	rdb     redis.UniversalClient
	cfg     queue.Config
	figures []figure
	limits  redisLimits
}

func (b *bench) want(part string) bool {
	if b.f.only == "" {
		return true
	}
	for _, p := range strings.Split(b.f.only, ",") {
		if strings.TrimSpace(p) == part {
			return true
		}
	}
	return false
}

func (b *bench) run(ctx context.Context) error {
	steps := []struct {
		part string
		fn   func(context.Context) error
	}{
		{"limit", b.measureLimits}, // first: the others compare to it
		{"enqueue", b.measureEnqueue},
		{"process", b.measureProcess},
		{"latency", b.measureLatency},
		{"memory", b.measureMemory},
	}
	for _, s := range steps {
		if s.part != "limit" && !b.want(s.part) {
			continue
		}
		b.progress("%s ...", s.part)
		err := s.fn(ctx)
		if err == nil && s.part != "limit" {
			err = b.probeLimit(ctx, probeCalls)
		}
		if err != nil {
			// Whatever call the deadline interrupted, the cause is the
			// run's own bound. (go-redis's socket deadline can fire a
			// moment before the context reports it.)
			if dl, _ := ctx.Deadline(); !time.Now().Before(dl) {
				return fmt.Errorf("%s: stopped by --timeout %s: %w", s.part, b.f.timeout, context.DeadlineExceeded)
			}
			return fmt.Errorf("%s: %w", s.part, err)
		}
	}
	b.limitFigures()
	b.resolveLimits()
	b.report(b.m.Stdout)
	return nil
}

// resolveLimits fills in the limits known only now: every ratio to the
// unpipelined EVALSHA divides by the median of the run's probes.
func (b *bench) resolveLimits() {
	for i, f := range b.figures {
		switch f.limitOf {
		case "evalsha":
			b.figures[i].Limit = b.limits.evalsha
		case "rtt":
			b.figures[i].Limit = b.limits.evalshaRTT
		}
	}
}

func (b *bench) add(f figure) {
	b.figures = append(b.figures, f)
	b.progress("  %-44s %12s %s", f.Name, f.value(), f.Unit)
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.m.Stderr, format+"\n", args...)
}

// report prints the table, a line on the targets, then one JSON line per
// figure.
func (b *bench) report(w io.Writer) {
	fmt.Fprintf(w, "\n%-44s %12s %-10s %8s  %-34s %-18s %s\n", "figure", "value", "unit", "of limit", "limit", "target", "met")
	goals, met := 0, 0
	for _, f := range b.figures {
		ratio := ""
		if f.Limit > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*f.ratio())
		}
		target, ok := "", ""
		if f.Goal != nil {
			target, ok = f.Goal.text, "NO"
			goals++
			if f.Goal.met(f) {
				ok = "yes"
				met++
			}
		}
		fmt.Fprintf(w, "%-44s %12s %-10s %8s  %-34s %-18s %s\n", f.Name, f.value(), f.Unit, ratio, f.LimitName, target, ok)
	}
	if goals > 0 {
		fmt.Fprintf(w, "\ntargets met: %d of %d\n", met, goals)
	}
	if b.f.tasks < defaultBenchTasks || b.f.memTasks < defaultBenchMemTasks {
		fmt.Fprintf(w, "note: fewer tasks than the defaults (--tasks %d, --mem-tasks %d); fixed costs weigh more per task, so the targets do not apply\n",
			defaultBenchTasks, defaultBenchMemTasks)
	}
	fmt.Fprintln(w)
	for _, f := range b.figures {
		out := struct {
			figure
			Ratio  float64 `json:"ratio,omitempty"`
			Target string  `json:"target,omitempty"`
			Met    *bool   `json:"met,omitempty"`
		}{figure: f, Ratio: f.ratio()}
		if f.Goal != nil {
			ok := f.Goal.met(f)
			out.Target, out.Met = f.Goal.text, &ok
		}
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false) // targets read ">= 50000", not "\u003e= 50000"
		_ = enc.Encode(out)
		fmt.Fprintf(w, "BENCH %s", line.Bytes())
	}
}

// cleanup deletes every key the run made.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, pattern := range []string{"{" + b.cfg.Prefix + ":*", b.cfg.Prefix + ":*"} {
		iter := b.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		flush := func() {
			if len(batch) > 0 {
				_ = b.rdb.Unlink(ctx, batch...).Err()
				batch = batch[:0]
			}
		}
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 500 {
				flush()
			}
		}
		flush()
	}
}
