package main

import (
	"context"
	"fmt"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/queue"
)

// partitionsCommand shows a queue's partition layout, or sets its count
// online (queue.Inspector.SetPartitions). Exit codes: 0 shown or set; 1
// Redis unreachable or no such queue; 2 bad flags, queue name or count.
type partitionsCommand struct{}

func (*partitionsCommand) name() string { return "partitions" }
func (*partitionsCommand) summary() string {
	return "show a queue's partitions, or change their count while it runs"
}

const partitionsDetails = `
Prints "route/serve": producers send new tasks to partitions 0..route-1,
workers serve 0..serve-1 (serve > route while the partitions a lower count
removed still drain). --set changes the count without a restart: producers
and workers follow within seconds; a lowered count's removed partitions take
no new task at once and are forgotten once they hold nothing. --output json
prints {"queue", "route", "serve"}.`

const partitionsExitCodes = `Exit codes:
  0  shown or set
  1  Redis unreachable, or no queue named --queue (without --set; the
     message names the queues, or the key prefixes that have some)
  2  bad flags, queue name or count`

func (c *partitionsCommand) run(ctx context.Context, m *Main, args []string) error {
	var redisURL, prefix, name string
	var set int
	var out outputFlag
	fs := m.flagSet(c)
	fs.StringVar(&redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	fs.StringVar(&name, "queue", "", "the queue (required)")
	fs.IntVar(&set, "set", 0, "set the partition count to this (1..1024); 0 shows it")
	out.add(fs)
	describe(fs, c, "--queue NAME [--set N] [flags]", partitionsDetails, partitionsExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := config.CheckName(prefix); err != nil {
		return fmt.Errorf("%w: --prefix: %v", errUsage, err)
	}
	if name == "" {
		return fmt.Errorf("%w: --queue is required", errUsage)
	}
	if err := checkQueueName(name); err != nil {
		return fmt.Errorf("%w: --queue: %v", errUsage, err)
	}
	if set < 0 || set > 1024 {
		return fmt.Errorf("%w: --set %d, want 1..1024 (0 shows the count)", errUsage, set)
	}
	if err := out.check(); err != nil {
		return err
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
	s := &session{rdb: rdb, insp: insp, prefix: prefix}
	if set > 0 {
		if err := insp.SetPartitions(ctx, name, set); err != nil {
			return s.explain(ctx, err, name)
		}
	}
	qi, err := insp.QueueInfo(ctx, name)
	if err != nil {
		return s.explain(ctx, err, name)
	}
	route := qi.Partitions - qi.Draining
	if out.json() {
		return writeJSON(m.Stdout, struct {
			Queue string `json:"queue"`
			Route int    `json:"route"` // producers send new tasks to partitions 0..route-1
			Serve int    `json:"serve"` // workers serve partitions 0..serve-1
		}{name, route, qi.Partitions})
	}
	fmt.Fprintf(m.Stdout, "%s %d/%d\n", name, route, qi.Partitions)
	return nil
}
