package main

import (
	"context"
	"fmt"
)

// deleteQueueCommand deletes a queue: every task in every state, its
// history and limits, and its registry entry (queue.Inspector.DeleteQueue;
// the dashboard's "Delete queue"). Exit codes: 0 deleted, or counted with
// --dry-run; 1 Redis unreachable, no such queue, or a queue in use
// without --force; 2 bad flags, or no --yes.
type deleteQueueCommand struct{}

func (*deleteQueueCommand) name() string    { return "delete-queue" }
func (*deleteQueueCommand) summary() string { return "delete a queue with every task it holds" }

const deleteQueueDetails = `
  shardq delete-queue --queue old-email --dry-run
  shardq delete-queue --queue old-email --yes

Removes every key of the queue and its registry entry, so it leaves the
queue list. Without --force it refuses a queue that holds tasks in any state
or that a live worker serves: stop those workers first, or they register it
again. Its keys are found with a SCAN for the queue's hash tag, a cost that
grows with the whole keyspace. Without --yes it only says how many tasks it
would delete, and exits 2; --dry-run says so and exits 0.`

const deleteQueueExitCodes = `Exit codes:
  0  deleted, or counted with --dry-run
  1  Redis unreachable, no such queue (or the key prefix has none), or the
     queue holds tasks or a live worker serves it, without --force
  2  bad flags, or neither --yes nor --dry-run`

func (c *deleteQueueCommand) run(ctx context.Context, m *Main, args []string) error {
	var f inspectFlags
	var q string
	var force, yes, dryRun bool
	fs := m.flagSet(c)
	f.add(fs)
	fs.StringVar(&q, "queue", "", "the queue (required)")
	fs.BoolVar(&force, "force", false, "delete it though it holds tasks or a live worker serves it")
	fs.BoolVar(&yes, "yes", false, "do it")
	fs.BoolVar(&dryRun, "dry-run", false, "count the tasks it would delete, and change nothing")
	describe(fs, c, "--queue Q (--yes | --dry-run) [--force]", deleteQueueDetails, deleteQueueExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := needQueue(q); err != nil {
		return err
	}
	if yes && dryRun {
		return usageErr("--yes and --dry-run contradict each other: pass one")
	}
	s, err := m.open(ctx, &f)
	if err != nil {
		return err
	}
	defer s.close()
	qi, err := s.insp.QueueInfo(ctx, q)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	n := qi.Pending + qi.Active + qi.Scheduled + qi.Retry + qi.Dead + qi.Succeeded + qi.Waiting
	r := &actionResult{Action: "delete-queue", Queue: q, Count: n, DryRun: !yes}
	what := fmt.Sprintf("queue %q and its %d tasks", q, n)
	if !yes {
		if dryRun {
			return r.print(m, f.out.json(), "would delete "+what)
		}
		return usageErr("would delete %s: pass --yes to delete it, or --dry-run to count only", what)
	}
	if err := s.insp.DeleteQueue(ctx, q, force); err != nil {
		return s.explain(ctx, err, q)
	}
	return r.print(m, f.out.json(), "deleted "+what)
}
