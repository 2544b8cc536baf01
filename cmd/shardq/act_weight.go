package main

import (
	"context"
	"fmt"
)

// weightCommand shows or sets a group's weight: how many tasks it starts
// per turn while several groups have tasks waiting
// (queue.Inspector.SetGroupWeight; the dashboard's "Set weight"). Exit
// codes: 0 shown or set; 1 Redis unreachable, no such queue (or the key
// prefix has none); 2 bad flags or weight.
type weightCommand struct{}

func (*weightCommand) name() string { return "weight" }
func (*weightCommand) summary() string {
	return "show or set a group's weight: its tasks started per turn"
}

const weightDetails = `
  shardq weight --queue email --group acme
  shardq weight --queue email --group acme --set 3

While several groups have tasks waiting they take turns: a group of weight 3
starts three tasks for each one a group of weight 1 starts. The default is 1;
--set 1 sets it back. It takes effect without a restart.`

const weightExitCodes = `Exit codes:
  0  shown or set
  1  Redis unreachable, or no such queue (or the key prefix has no queues)
  2  bad flags, or a weight outside 1..1000`

func (c *weightCommand) run(ctx context.Context, m *Main, args []string) error {
	var f inspectFlags
	var q, group string
	var set int
	fs := m.flagSet(c)
	f.add(fs)
	fs.StringVar(&q, "queue", "", "the queue (required)")
	fs.StringVar(&group, "group", "", "the group (required)")
	fs.IntVar(&set, "set", 0, "set the weight to this (1..1000); 0 shows it")
	describe(fs, c, "--queue Q --group G [--set N]", weightDetails, weightExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := needQueue(q); err != nil {
		return err
	}
	switch {
	case group == "":
		return usageErr("--group is required")
	case set < 0 || set > 1000:
		return usageErr("--set %d, want 1..1000 (0 shows the weight)", set)
	}
	s, err := m.open(ctx, &f)
	if err != nil {
		return err
	}
	defer s.close()
	if set > 0 {
		if err := s.insp.SetGroupWeight(ctx, q, group, set); err != nil {
			return s.explain(ctx, err, q)
		}
	}
	g, err := s.insp.GetGroup(ctx, q, group)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	if f.out.json() {
		w, err := s.work(ctx, q)
		if err != nil {
			return s.explain(ctx, err, q)
		}
		return writeJSON(m.Stdout, newGroupJSON(*g, w))
	}
	fmt.Fprintf(m.Stdout, "%s %s %d\n", q, group, g.Weight)
	return nil
}
