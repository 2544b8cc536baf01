package worker

import (
	"context"
	"fmt"

	"github.com/shardq/shardq/queue"
)

// Workflow returns the workflow the task is a node of, a chain's or a
// batch's among them, and its node's name, as queue.TaskInfo has them;
// both "" for a task of no workflow.
func (t *Task) Workflow() (id, node string) {
	if t.job == nil {
		return "", ""
	}
	return t.job.Workflow()
}

// PreviousResult returns the result the link before the task wrote
// (SetResult), in a chain (queue.Chain): the result of node k-1 for node
// k. It is nil when the task is no link after the first, or the link
// before wrote none.
func (t *Task) PreviousResult(ctx context.Context) ([]byte, error) {
	if t.job == nil {
		return nil, nil
	}
	v, err := t.job.PreviousResult(ctx)
	return v, t.flowErr(err)
}

// ParentResult returns the result that parent, a node of the task's
// workflow, recorded when it succeeded (SetResult): nil when it wrote
// none, or did not succeed (a child over an EdgeRun edge runs after a
// dead parent). A task in no workflow, or a parent the workflow lacks, is
// queue.ErrInvalid.
func (t *Task) ParentResult(ctx context.Context, parent string) ([]byte, error) {
	if t.job == nil {
		return nil, t.flowErr(errNoWorkflow)
	}
	v, err := t.job.ParentResult(ctx, parent)
	return v, t.flowErr(err)
}

// ExtendWorkflow adds w's nodes to the task's workflow, as
// queue.Client.ExtendWorkflow does: fan-out from inside a node. A new node
// may name this task's node as its parent: it waits for this task to
// succeed. A task in no workflow is queue.ErrInvalid.
func (t *Task) ExtendWorkflow(ctx context.Context, w *queue.Workflow) error {
	if t.job == nil {
		return t.flowErr(errNoWorkflow)
	}
	return t.flowErr(t.job.ExtendWorkflow(ctx, w))
}

var errNoWorkflow = fmt.Errorf("%w: it is in no workflow", queue.ErrInvalid)

// flowErr names the task in err, from one of its workflow calls; nil
// stays nil.
func (t *Task) flowErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("worker: task %s: %w", t.ID, err)
}
