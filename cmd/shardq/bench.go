package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// benchParts are the parts of a run, in the order they run.
var benchParts = []string{"limit", "enqueue", "process", "latency", "memory"}

type benchFlags struct {
	redisURL string
	tasks    int
	memTasks int
	payload  int
	only     string
	timeout  time.Duration
}

// figure is one measured result.
type figure struct {
	Name  string  `json:"figure"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Limit is the Redis limit the figure compares to (same unit), 0 = none.
	Limit     float64 `json:"limit,omitempty"`
	LimitName string  `json:"limit_name,omitempty"`
	Target    string  `json:"target,omitempty"`
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
	fs.IntVar(&f.tasks, "tasks", 100_000, "tasks for the processing runs")
	fs.IntVar(&f.memTasks, "mem-tasks", 1_000_000, "pending tasks for the memory figure")
	fs.IntVar(&f.payload, "payload", 100, "payload bytes per task")
	fs.StringVar(&f.only, "only", "", "comma-separated parts to run: limit,enqueue,process,latency,memory (default all)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "stop the whole run after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.tasks < 1000 || f.memTasks < 1000 || f.payload < 0 {
		return fmt.Errorf("%w: -tasks and -mem-tasks must be at least 1000, -payload at least 0", errUsage)
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
	b := &bench{m: m, f: f, rdb: rdb, cfg: queue.Config{Prefix: "shardq-bench-" + wire.NewID()[14:]}}
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
		if err := s.fn(ctx); err != nil {
			// Whatever call the deadline interrupted, the cause is the
			// run's own bound. (go-redis's socket deadline can fire a
			// moment before the context reports it.)
			if dl, _ := ctx.Deadline(); !time.Now().Before(dl) {
				return fmt.Errorf("%s: stopped by --timeout %s: %w", s.part, b.f.timeout, context.DeadlineExceeded)
			}
			return fmt.Errorf("%s: %w", s.part, err)
		}
	}
	b.report(b.m.Stdout)
	return nil
}

func (b *bench) add(f figure) {
	b.figures = append(b.figures, f)
	b.progress("  %-44s %12.1f %s", f.Name, f.Value, f.Unit)
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.m.Stderr, format+"\n", args...)
}

// report prints the table, then one JSON line per figure.
func (b *bench) report(w io.Writer) {
	fmt.Fprintf(w, "\n%-44s %12s %-10s %8s  %-34s %s\n", "figure", "value", "unit", "of limit", "limit", "target")
	for _, f := range b.figures {
		ratio := ""
		if f.Limit > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*f.ratio())
		}
		fmt.Fprintf(w, "%-44s %12.1f %-10s %8s  %-34s %s\n", f.Name, f.Value, f.Unit, ratio, f.LimitName, f.Target)
	}
	fmt.Fprintln(w)
	for _, f := range b.figures {
		line, _ := json.Marshal(struct {
			figure
			Ratio float64 `json:"ratio,omitempty"`
		}{f, f.ratio()})
		fmt.Fprintf(w, "BENCH %s\n", line)
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
