package main

import (
	"context"
	"fmt"
)

// pauseCommand pauses a queue, or one group of it, and resume resumes it
// (queue.Inspector.Pause, Resume). Exit codes: 0 done; 1 Redis
// unreachable, no such queue (or the key prefix has none); 2 bad flags.
type pauseCommand struct{ resume bool }

func (c *pauseCommand) name() string {
	if c.resume {
		return "resume"
	}
	return "pause"
}

func (c *pauseCommand) summary() string {
	if c.resume {
		return "resume a paused queue, or a paused group of a queue"
	}
	return "pause a queue, or one group of it: none of its tasks starts"
}

const pauseDetails = `
A queue:  shardq %[1]s --queue email
A group:  shardq %[1]s --queue email --group acme

Workers start no task of a paused queue, or of a paused group, until it is
resumed; tasks running go on, and producers go on enqueueing.`

const pauseExitCodes = `Exit codes:
  0  done
  1  Redis unreachable, or no such queue (or the key prefix has no queues)
  2  bad flags`

func (c *pauseCommand) run(ctx context.Context, m *Main, args []string) error {
	var f inspectFlags
	var q, group string
	fs := m.flagSet(c)
	f.add(fs)
	fs.StringVar(&q, "queue", "", "the queue (required)")
	fs.StringVar(&group, "group", "", "only this group of the queue")
	describe(fs, c, "--queue Q [--group G]", fmt.Sprintf(pauseDetails, c.name()), pauseExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := needQueue(q); err != nil {
		return err
	}
	s, err := m.open(ctx, &f)
	if err != nil {
		return err
	}
	defer s.close()
	act, r := s.insp.Pause, &actionResult{Action: c.name(), Queue: q, Group: group}
	if c.resume {
		act = s.insp.Resume
	}
	var groups []string
	said := fmt.Sprintf("%sd queue %q", c.name(), q)
	if group != "" {
		groups, r.Action = []string{group}, c.name()+"-group"
		said = fmt.Sprintf("%sd group %q of queue %q", c.name(), group, q)
	}
	if err := act(ctx, q, groups...); err != nil {
		return s.explain(ctx, err, q)
	}
	return r.print(m, f.out.json(), said)
}
