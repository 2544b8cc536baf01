package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// flowGrace is how long a flow's tasks wait in their home's outbox before
// workers' sweeps deliver them: the producer that put them there delivers
// them at once, so sweepers step in only for a producer that died.
const flowGrace = 15 * time.Second

// maxAddStep bounds the tasks one registration script call carries.
const maxAddStep = 1000

// BatchOptions configures a new batch (Client.NewBatch); every field
// may be left zero.
type BatchOptions struct {
	// Description is for people, at most 1,000 bytes
	// (WorkflowInfo.Description).
	Description string
	// OnSuccess is enqueued once, when every member succeeded, after
	// Close. A dead member retried later to success fires it then.
	OnSuccess *Task
	// OnComplete is enqueued once, when every member finished, succeeded
	// or dead, after Close. When every member succeeded, both fire, as
	// in Sidekiq.
	OnComplete *Task
	// Parent makes the new batch one member of the batch of that ID: the
	// parent counts it as succeeded when every member of the child
	// succeeded, else as dead, once the child finished, so the parent's
	// callbacks run after the child's. From the handler of one of the
	// parent's members, with the handler's context, it works after the
	// parent was closed, as Add does.
	Parent string
}

// batchShape is what makes a workflow a batch: its join nodes (the
// callbacks: every other node is their parent, with no field stored per
// edge; OnComplete over EdgeRun, OnSuccess over EdgeFail, so a dead
// member fails OnSuccess until a retry makes it succeed), its
// description, and, for a nested batch, its parent and its node there;
// its gate is home.Gate.
type batchShape struct {
	join   []string // each name after its edge's letter
	desc   string
	parent string
	node   string
	inside bool // the caller is a task of the parent; go-redis sends "1" or "0"
}

// maxNodes is w's bound of nodes.
func (w *Workflow) maxNodes() int {
	if w.shape != nil {
		return maxBatchNodes
	}
	return maxWorkflowNodes
}

// NewBatch creates an open batch, a group of tasks with callbacks, and
// returns its ID. Add tasks to it (AddToBatch), then close it
// (CloseBatch): its callbacks are enqueued exactly once when its members
// have finished. A batch is a workflow of one shape (batchShape): its
// members are roots, its callbacks wait for every member, and a
// taskless gate node, which CloseBatch makes succeed, holds them until
// then; Inspector.GetWorkflow reads it too.
func (c *Client) NewBatch(ctx context.Context, o BatchOptions) (string, error) {
	if len(o.Description) > 1000 {
		return "", fmt.Errorf("%w: batch description of %d bytes, limit 1000", errInvalidOption, len(o.Description))
	}
	if _, err := uuid.Parse(o.Parent); o.Parent != "" && err != nil {
		return "", fmt.Errorf("new batch: parent %q: %w", o.Parent, errBatchNotFound)
	}
	id := newFlowID(o.Parent)
	w := NewWorkflow()
	w.shape = &batchShape{desc: o.Description, parent: o.Parent, inside: o.Parent != "" && home.MemberOf(ctx) == o.Parent}
	if o.Parent != "" {
		w.shape.node = "." + keys.ShortID(id)
	}
	w.add(home.Gate, nil, nil)
	if o.OnComplete != nil {
		w.add(home.OnComplete, o.OnComplete, nil)
		w.shape.join = append(w.shape.join, edgeCode(EdgeRun)+home.OnComplete)
	}
	if o.OnSuccess != nil {
		w.add(home.OnSuccess, o.OnSuccess, nil)
		w.shape.join = append(w.shape.join, edgeCode(EdgeFail)+home.OnSuccess)
	}
	if _, _, err := c.recordWorkflow(ctx, id, w, "new"); err != nil {
		if o.Parent != "" {
			return "", fmt.Errorf("new batch: parent %s: %w", o.Parent, batchErr(err))
		}
		return "", fmt.Errorf("new batch: %w", err)
	}
	return id, nil
}

// batchErr says err, from a call on a batch's workflow, of the batch.
func batchErr(err error) error {
	switch {
	case errors.Is(err, errWorkflowNotFound):
		return errBatchNotFound
	case errors.Is(err, errBatchClosed), errors.Is(err, errBatchFinished):
		return err
	case errors.Is(err, errWorkflowFinished), errors.Is(err, errWorkflowCancelled):
		return errBatchFinished
	}
	return err
}

// newFlowID returns a new UUIDv7 text; with a parent batch, one whose home
// is the parent's, so the child is created and registered in one script.
func newFlowID(parent string) string {
	for {
		id := uuid.Must(uuid.NewV7()).String()
		if parent == "" || keys.HomeOf(id) == keys.HomeOf(parent) {
			return id
		}
	}
}

// AddToBatch adds tasks to batch id and enqueues them. They are recorded
// at the batch's home before they are enqueued, so none can finish before it
// counts; a producer that dies after recording loses nothing (workers
// deliver what it left after a grace of 15s). Each task gets a generated
// ID; TaskID and Unique are refused (a member's ID is the batch's
// business, and a duplicate refused would never finish). Adding after
// CloseBatch is ErrFinished, except from the handler of one of the
// batch's own members (worker.Task.Workflow names its batch), with the
// handler's context: the batch cannot finish while that member runs.
// Adding after the batch finished is ErrFinished. Any other error leaves
// the outcome unknown, as for EnqueueMany: adding again may add twice.
// Tasks are recorded a thousand per script call.
func (c *Client) AddToBatch(ctx context.Context, id string, tasks ...*Task) ([]*TaskInfo, error) {
	infos := make([]*TaskInfo, 0, len(tasks))
	mode := extendMode(ctx, id)
	for from := 0; from < len(tasks); from += maxAddStep {
		w := NewWorkflow()
		for i, t := range tasks[from:min(len(tasks), from+maxAddStep)] {
			if t == nil {
				return nil, fmt.Errorf("batch %s: task %d: %w: nil task", id, from+i, errInvalidTask)
			}
			id := wire.NewID()
			w.add(home.MemberName(id), t, nil)
			w.nodes[len(w.nodes)-1].id = id
		}
		_, in, err := c.recordWorkflow(ctx, id, w, mode)
		if err != nil {
			return nil, fmt.Errorf("batch %s: add: %w", id, batchErr(err))
		}
		infos = append(infos, in...)
	}
	return infos, nil
}

// CloseBatch closes batch id to adds from outside it: its gate node
// succeeds. Once every member has finished (at once when all have), its
// callbacks are enqueued. Closing twice is harmless.
func (c *Client) CloseBatch(ctx context.Context, id string) error {
	if err := redisError(c.gate.Pass(ctx, c.rdb, c.cfg.Prefix)); err != nil {
		return fmt.Errorf("batch %s: close: %w", id, err)
	}
	hn := keys.HomeOf(id)
	h := keys.Home(c.cfg.Prefix, hn)
	reply, err := doValue(ctx, c.rdb, func() ([]any, error) {
		// no grace: the callbacks a cluster puts into the outbox are
		// delivered below, as due
		return script.WorkflowAdd.Run(ctx, c.rdb, []string{h.Workflow(id)},
			h.H, "", keys.ShortID(id), c.cfg.WorkflowRetention.Milliseconds(), 0, "note", maxBatchNodes, maxWorkflowEdges, "", home.Gate).Slice()
	})
	if err != nil {
		return fmt.Errorf("batch %s: close: %w", id, redisError(err))
	}
	if err := workflowCode(id, reply); err != nil {
		if errors.Is(err, errInvalidWorkflow) {
			err = errBatchNotFound // a workflow, but not a batch
		}
		return fmt.Errorf("batch %s: close: %w", id, batchErr(err))
	}
	if len(reply) > 1 {
		// callbacks due: deliver them now; workers' sweeps would otherwise
		env := flowEnv(c.rdb, &c.cfg)
		_ = rcall.Do(ctx, c.rdb, func() error { _, err := env.Deliver(ctx, []int{hn}); return err })
	}
	return nil
}

// delivery builds task t as a flow task with flow ref ref, under id
// (stored), or a generated ID when id is "", and returns its info too.
func (c *Client) delivery(ctx context.Context, t *Task, id, ref string) (*wire.Delivery, *TaskInfo, error) {
	o, err := resolveOptions(t.opts, nil)
	switch {
	case err != nil:
		return nil, nil, err
	case o.taskID != "":
		return nil, nil, fmt.Errorf("%w: TaskID %q on a flow task: flow tasks get generated IDs", errInvalidOption, o.taskID)
	case o.unique > 0 || o.untilFinished:
		// a unique task refused at delivery would never run, and its
		// batch or workflow never finish
		return nil, nil, fmt.Errorf("%w: Unique on flow task %q: a duplicate would stop its batch or workflow", errInvalidOption, t.typ)
	}
	if id == "" {
		id = wire.NewID()
	}
	p, err := c.build(t, []Option{TaskID(wire.PublicID(id)), func(o *options) error { o.flow = ref; return nil }}, nil, time.Now(), nil)
	if err != nil {
		return nil, nil, err
	}
	if c.routes.Guessing(p.info.Queue) {
		if err := c.routes.Read(ctx, c.rdb, []string{p.info.Queue}); err != nil {
			return nil, nil, err
		}
	}
	c.place(&p)
	return &wire.Delivery{
		Queue: p.info.Queue, Partition: p.info.Partition, Partitions: c.routes.Count(p.info.Queue),
		ID: p.id, Msg: p.msg, At: p.at, In: p.in, Unique: p.unique, UniqueTTL: p.uttl,
	}, p.info, nil
}

// flowEnv returns what package home needs of a Client's or an
// Inspector's rdb and cfg.
func flowEnv(rdb redis.UniversalClient, cfg *Config) *home.Env {
	return &home.Env{RDB: rdb, Prefix: cfg.Prefix, ShardSize: cfg.ShardSize, FeedSize: cfg.FeedSize, IDTTL: cfg.IDTTL}
}
