package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardq/shardq/queue"
)

// cancelCommand cancels running tasks (queue.Inspector.CancelTask: the
// worker cancels the handler's context at its next heartbeat), or a
// workflow (CancelWorkflow). Exit codes: 0 asked; 1 Redis unreachable,
// not found, or a task not running; 2 bad flags.
type cancelCommand struct{}

func (*cancelCommand) name() string    { return "cancel" }
func (*cancelCommand) summary() string { return "cancel running tasks, or a workflow" }

const cancelDetails = `
A running task:  shardq cancel --queue email ID...
A workflow:      shardq cancel --workflow ID

A task's worker cancels its handler's context at its next heartbeat; a
handler that then returns an error sends the task to dead, not to a retry.
Delete a task that is not running instead. A cancelled workflow enqueues no
more nodes; its nodes already enqueued may still finish.`

const cancelExitCodes = `Exit codes:
  0  asked
  1  Redis unreachable, no such queue, task or workflow (or the key prefix
     has no queues), or a task that is not running (the others are asked)
  2  bad flags`

func (c *cancelCommand) run(ctx context.Context, m *Main, args []string) error {
	var f inspectFlags
	var q, workflow string
	fs := m.flagSet(c)
	f.add(fs)
	fs.StringVar(&q, "queue", "", "the queue of the tasks")
	fs.StringVar(&workflow, "workflow", "", "the `ID` of the workflow to cancel, a chain or a batch among them")
	describe(fs, c, "--queue Q ID... | --workflow ID", cancelDetails, cancelExitCodes)
	ids, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case workflow != "" && (q != "" || len(ids) > 0):
		return usageErr("--workflow cancels a workflow: it takes no --queue or task IDs")
	case workflow == "" && len(ids) == 0:
		return usageErr("name the running tasks to cancel (--queue Q ID...), or --workflow ID")
	case workflow == "" && q == "":
		return usageErr("--queue is required: which queue runs %q?", ids)
	case workflow == "":
		if err := needQueue(q); err != nil {
			return err
		}
	}
	s, err := m.open(ctx, &f)
	if err != nil {
		return err
	}
	defer s.close()
	if workflow != "" {
		if err := s.insp.CancelWorkflow(ctx, workflow); err != nil {
			return s.explain(ctx, err, "")
		}
		r := &actionResult{Action: "cancel-workflow", Workflow: workflow, Count: 1}
		return r.print(m, f.out.json(), "cancelled workflow "+workflow)
	}
	r := &actionResult{Action: "cancel", Queue: q}
	for _, id := range ids {
		err := s.insp.CancelTask(ctx, q, id)
		switch {
		case err == nil:
			r.Count++
		case errors.Is(err, queue.ErrNotFound), errors.Is(err, queue.ErrTaskState):
			if why := s.explain(ctx, err, q); why != err {
				return why // the queue, or the prefix, has nothing: every ID would say so
			}
			r.Failed = append(r.Failed, failedTask{ID: id, Error: err.Error()})
		default:
			return fmt.Errorf("after %d tasks: %w", r.Count, err)
		}
	}
	if err := r.partial(m, f.out.json(), "asked to cancel "+tasksOf(r.Count, false, "", q)); err != nil {
		return err
	}
	if len(r.Failed) > 0 {
		return fmt.Errorf("%d of %d tasks not cancelled (see above)", len(r.Failed), len(ids))
	}
	return nil
}
