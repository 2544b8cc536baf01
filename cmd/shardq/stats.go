package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/queue"
)

// statsCommand prints the tasks of every queue (or one) per state, with
// whether the queue is paused and how long its oldest pending task has
// waited, as an aligned table or as JSON. Exit codes: 0 printed; 1 Redis
// unreachable, no such queue, or a key prefix with no queues (the message
// names the prefixes that have some); 2 bad flags or queue name.
type statsCommand struct{}

func (*statsCommand) name() string { return "stats" }
func (*statsCommand) summary() string {
	return "count tasks per queue and state, as a table or JSON"
}

const statsDetails = `
Columns: pending, active (running), scheduled, retry (waiting to run again),
dead, succeeded (kept for their retention), waiting (pending tasks parked for
their group's limit), and latency: the age of the oldest pending task. The
paused queues are named below the table. Each queue costs two Redis round
trips, whatever its size.

--json (or --output json) prints an array of objects with the same fields
(latency_ms in milliseconds), one per queue.`

const statsExitCodes = `Exit codes:
  0  printed
  1  Redis unreachable, no queue named --queue, or no queues under the
     key prefix (the message names the prefixes that have some)
  2  bad flags or queue name`

// queueStats is a queue's line in --json output.
type queueStats struct {
	Queue      string `json:"queue"`
	Partitions int    `json:"partitions"`
	Pending    int64  `json:"pending"`
	Active     int64  `json:"active"`
	Scheduled  int64  `json:"scheduled"`
	Retry      int64  `json:"retry"`
	Dead       int64  `json:"dead"`
	Succeeded  int64  `json:"succeeded"`
	Waiting    int64  `json:"waiting"`
	Paused     bool   `json:"paused"`
	LatencyMS  int64  `json:"latency_ms"`
}

func (c *statsCommand) run(ctx context.Context, m *Main, args []string) error {
	var redisURL, prefix, name string
	var asJSON bool
	var out outputFlag
	fs := m.flagSet(c)
	fs.StringVar(&redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	fs.StringVar(&name, "queue", "", "show this queue only")
	fs.BoolVar(&asJSON, "json", false, "print JSON (as --output json)")
	out.add(fs)
	describe(fs, c, "[flags]", statsDetails, statsExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := config.CheckName(prefix); err != nil {
		return fmt.Errorf("%w: --prefix: %v", errUsage, err)
	}
	if err := out.check(); err != nil {
		return err
	}
	asJSON = asJSON || out.json()
	if name != "" {
		if err := checkQueueName(name); err != nil {
			return fmt.Errorf("%w: --queue: %v", errUsage, err)
		}
	}
	rdb, closeRedis, err := m.connect(ctx, redisURL, false, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	insp, err := queue.NewInspector(rdb, queue.Config{Prefix: prefix})
	if err != nil {
		return err
	}
	if err := noQueues(ctx, rdb, insp, prefix); err != nil {
		return err // a prefix with no queues: say so, and name those that have some
	}
	infos, err := queueInfos(ctx, insp, name)
	if err != nil {
		return err
	}
	if asJSON {
		return writeStatsJSON(m.Stdout, infos)
	}
	writeStatsTable(m.Stdout, infos)
	return nil
}

// queueInfos reads queue name, or every queue when name is "".
func queueInfos(ctx context.Context, insp *queue.Inspector, name string) ([]*queue.QueueInfo, error) {
	if name == "" {
		return insp.QueueInfos(ctx)
	}
	names, err := insp.Queues(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, name) {
		if len(names) == 0 {
			return nil, fmt.Errorf("no queue %q: there are no queues yet (nothing was enqueued and no worker ran)", name)
		}
		return nil, fmt.Errorf("no queue %q; the queues are: %s", name, strings.Join(names, ", "))
	}
	qi, err := insp.QueueInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	return []*queue.QueueInfo{qi}, nil
}

func writeStatsJSON(w io.Writer, infos []*queue.QueueInfo) error {
	out := make([]queueStats, len(infos))
	for i, qi := range infos {
		out[i] = queueStats{Queue: qi.Queue, Partitions: qi.Partitions, Pending: qi.Pending, Active: qi.Active,
			Scheduled: qi.Scheduled, Retry: qi.Retry, Dead: qi.Dead, Succeeded: qi.Succeeded, Waiting: qi.Waiting,
			Paused: qi.Paused, LatencyMS: qi.Latency.Milliseconds()}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeStatsTable prints an aligned table within termWidth: names left,
// numbers right, and a total line when there are several queues. The
// paused queues follow it on a line of their own: a PAUSED column would
// push the table past 80 columns.
func writeStatsTable(w io.Writer, infos []*queue.QueueInfo) {
	t := newTable(column{head: "QUEUE", cut: true}, num("PENDING"), num("ACTIVE"), num("SCHEDULED"), num("RETRY"),
		num("DEAD"), num("SUCCEEDED"), num("WAITING"), num("LATENCY"))
	var total queue.QueueInfo
	var paused []string
	for _, qi := range infos {
		t.add(statsRow(qi.Queue, qi)...)
		total.Pending += qi.Pending
		total.Active += qi.Active
		total.Scheduled += qi.Scheduled
		total.Retry += qi.Retry
		total.Dead += qi.Dead
		total.Succeeded += qi.Succeeded
		total.Waiting += qi.Waiting
		total.Latency = max(total.Latency, qi.Latency)
		if qi.Paused {
			paused = append(paused, qi.Queue)
		}
	}
	if len(infos) > 1 {
		t.add(statsRow("(all)", &total)...)
	}
	t.write(w)
	if len(paused) > 0 {
		fmt.Fprintln(w, wrap("Paused: "+strings.Join(paused, ", ")+".", termWidth))
	}
}

func statsRow(name string, qi *queue.QueueInfo) []string {
	return []string{name, itoa(qi.Pending), itoa(qi.Active), itoa(qi.Scheduled), itoa(qi.Retry), itoa(qi.Dead),
		itoa(qi.Succeeded), itoa(qi.Waiting), latency(qi.Latency)}
}

// latency renders the age of the oldest pending task at a useful precision.
func latency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
