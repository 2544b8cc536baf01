package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/flow"
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

// BatchOption configures NewBatch.
type BatchOption func(*batchOptions) error

type batchOptions struct {
	desc                string
	parent              string
	onSuccess, onComple *callback
}

type callback struct {
	task *Task
	opts []Option
}

// OnSuccess sets the task enqueued, once, when every member of the batch
// succeeded (after Close). Dead members retried later to success fire it
// then. opts apply over the task's own options.
func OnSuccess(t *Task, opts ...Option) BatchOption {
	return func(b *batchOptions) error {
		if t == nil {
			return fmt.Errorf("%w: nil OnSuccess task", errInvalidTask)
		}
		b.onSuccess = &callback{t, opts}
		return nil
	}
}

// OnComplete sets the task enqueued, once, when every member of the batch
// finished (after Close), succeeded or dead. When every member succeeded
// both OnComplete and OnSuccess fire, as in Sidekiq.
func OnComplete(t *Task, opts ...Option) BatchOption {
	return func(b *batchOptions) error {
		if t == nil {
			return fmt.Errorf("%w: nil OnComplete task", errInvalidTask)
		}
		b.onComple = &callback{t, opts}
		return nil
	}
}

// BatchDescription sets a batch's description, for people (BatchInfo).
func BatchDescription(s string) BatchOption {
	return func(b *batchOptions) error {
		if len(s) > 1000 {
			return fmt.Errorf("%w: batch description of %d bytes, limit 1000", errInvalidOption, len(s))
		}
		b.desc = s
		return nil
	}
}

// parentBatch makes the new batch one member of the batch id: the parent
// counts it as succeeded when every member of the child succeeded, else as
// dead, once the child finished. Parent and child live in one flow home.
func parentBatch(id string) BatchOption {
	return func(b *batchOptions) error {
		if _, err := uuid.Parse(id); err != nil {
			return fmt.Errorf("%w: parent batch ID %q", errBatchNotFound, id)
		}
		b.parent = id
		return nil
	}
}

// Batch is a group of tasks with callbacks; see Client.NewBatch.
type Batch struct {
	c    *Client
	id   string
	home int
}

// ID returns the batch's ID.
func (b *Batch) ID() string { return b.id }

// NewBatch creates an open batch. Add tasks to it, then Close it: its
// callbacks are enqueued exactly once when its members have finished.
func (c *Client) NewBatch(ctx context.Context, opts ...BatchOption) (*Batch, error) {
	return c.newBatch(ctx, false, opts)
}

// NewBatch creates a batch nested in b, one member of it: the
// child counts as one member of b. From the handler of one of b's members,
// with the handler's context, it works after b was closed, as Add does.
func (b *Batch) NewBatch(ctx context.Context, opts ...BatchOption) (*Batch, error) {
	return b.c.newBatch(ctx, flow.MemberOf(ctx) == b.id, append(opts[:len(opts):len(opts)], parentBatch(b.id)))
}

func (c *Client) newBatch(ctx context.Context, member bool, opts []BatchOption) (*Batch, error) {
	var o batchOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	id := newFlowID(o.parent)
	b := &Batch{c: c, id: id, home: keys.HomeOf(id)}
	h := keys.Home(c.cfg.Prefix, b.home)
	args := []any{h.H, "", id, o.desc, o.parent, c.cfg.FlowRetention.Milliseconds()}
	for _, cb := range []*callback{o.onSuccess, o.onComple} {
		if cb == nil {
			args = append(args, "", "")
			continue
		}
		d, err := c.delivery(cb.task, cb.opts, wire.FlowRef{Kind: 'b', Home: b.home, ID: id}.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("batch callback: %w", err)
		}
		enc, err := wire.EncodeDelivery(d)
		if err != nil {
			return nil, err
		}
		args = append(args, d.ID, enc)
	}
	args = append(args, boolArg(member))
	code, err := c.runFlow(ctx, script.FlowBatchNew, h.Batch(id), args)
	if err != nil {
		return nil, fmt.Errorf("new batch: %w", err)
	}
	switch code {
	case codes.FlowIDTaken:
		return nil, fmt.Errorf("new batch: ID %s taken", id) // a UUIDv7 collision: never
	case codes.FlowNotFound:
		return nil, fmt.Errorf("new batch: parent %s: %w", o.parent, errBatchNotFound)
	case codes.FlowFinished:
		return nil, fmt.Errorf("new batch: parent %s: %w", o.parent, errBatchFinished)
	case codes.FlowClosed:
		return nil, fmt.Errorf("new batch: parent %s: %w", o.parent, errBatchClosed)
	}
	return b, nil
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

// OpenBatch returns a handle to the batch id, created earlier, perhaps by
// another process, to Add to it or Close it. Nothing is read: an unknown
// ID is ErrNotFound at the first call.
func (c *Client) OpenBatch(id string) *Batch {
	return &Batch{c: c, id: id, home: keys.HomeOf(id)}
}

// Add adds tasks to the batch and enqueues them. They are registered at
// the batch's home before they are enqueued, so none can finish before it
// counts; a producer that dies after registering loses nothing (workers
// deliver what it left after a grace of 15s). Each task gets a generated
// ID; TaskID and Unique are refused (a member's ID is the batch's
// business, and a duplicate refused would never finish).
// Add after Close is ErrFinished, except from the handler of one of
// the batch's own members, with the handler's context: the batch cannot
// finish while that member runs. Add after the batch finished is
// ErrFinished. Any other error leaves the
// outcome unknown, as for EnqueueMany: adding again may add twice.
// Tasks are registered a thousand per script call.
func (b *Batch) Add(ctx context.Context, tasks ...*Task) ([]*TaskInfo, error) {
	c := b.c
	ref := wire.FlowRef{Kind: 'b', Home: b.home, ID: b.id}.String()
	infos := make([]*TaskInfo, 0, len(tasks))
	ds := make([]*wire.Delivery, 0, len(tasks))
	for i, t := range tasks {
		info := &TaskInfo{}
		d, err := c.delivery(t, nil, ref, info)
		if err != nil {
			return nil, fmt.Errorf("batch %s: task %d: %w", b.id, i, err)
		}
		infos = append(infos, info)
		ds = append(ds, d)
	}
	h := keys.Home(c.cfg.Prefix, b.home)
	member := boolArg(flow.MemberOf(ctx) == b.id)
	env := c.flowEnv()
	for from := 0; from < len(ds); from += maxAddStep {
		step := ds[from:min(len(ds), from+maxAddStep)]
		args := []any{h.H, "", b.id, flowGrace.Milliseconds(), member}
		for _, d := range step {
			enc, err := wire.EncodeDelivery(d)
			if err != nil {
				return nil, err
			}
			args = append(args, d.ID, enc)
		}
		code, err := c.runFlow(ctx, script.FlowAdd, h.Batch(b.id), args)
		if err != nil {
			return nil, fmt.Errorf("batch %s: add: %w", b.id, err)
		}
		if err := batchCode(b.id, code); err != nil {
			return nil, err
		}
		if err := rcall.Do(ctx, c.rdb, func() error { return env.DeliverEntries(ctx, b.home, step) }); err != nil {
			// registered: workers deliver them after the grace
			return nil, fmt.Errorf("batch %s: enqueue members (registered; workers deliver them later): %w", b.id, err)
		}
	}
	return infos, nil
}

func batchCode(id string, code int64) error {
	switch code {
	case codes.FlowNotFound:
		return fmt.Errorf("batch %s: %w", id, errBatchNotFound)
	case codes.FlowFinished:
		return fmt.Errorf("batch %s: %w", id, errBatchFinished)
	case codes.FlowClosed:
		return fmt.Errorf("batch %s: %w", id, errBatchClosed)
	}
	return nil
}

// Close closes the batch to Adds from outside it. Once every member has
// finished (at once when all have), its callbacks are enqueued. Closing
// twice is harmless.
func (b *Batch) Close(ctx context.Context) error {
	c := b.c
	h := keys.Home(c.cfg.Prefix, b.home)
	code, err := c.runFlow(ctx, script.FlowClose, h.Batch(b.id), []any{h.H, "", b.id})
	if err != nil {
		return fmt.Errorf("batch %s: close: %w", b.id, err)
	}
	if code == codes.FlowNotFound {
		return fmt.Errorf("batch %s: %w", b.id, errBatchNotFound)
	}
	if code > 0 {
		// callbacks due: deliver them now; workers' sweeps would otherwise
		env := c.flowEnv()
		_ = rcall.Do(ctx, c.rdb, func() error { _, err := env.Deliver(ctx, []int{b.home}); return err })
	}
	return nil
}

// delivery builds task t (with call options opts) as a flow task under a
// generated ID: ref is its flow ref (a callback carries its batch's). info, when
// not nil, receives the task's info.
func (c *Client) delivery(t *Task, opts []Option, ref string, info *TaskInfo) (*wire.Delivery, error) {
	if t != nil {
		o, err := resolveOptions(t.opts, opts)
		switch {
		case err != nil:
			return nil, err
		case o.taskID != "":
			return nil, fmt.Errorf("%w: TaskID %q on a flow task: flow tasks get generated IDs", errInvalidOption, o.taskID)
		case o.unique > 0 || o.untilFinished:
			// a unique task refused at delivery would never run, and its
			// batch or workflow never finish
			return nil, fmt.Errorf("%w: Unique on flow task %q: a duplicate would stop its batch or workflow", errInvalidOption, t.typ)
		}
	}
	id := wire.NewID()
	all := append(opts[:len(opts):len(opts)], TaskID(wire.PublicID(id)), func(o *options) error { o.flow = ref; return nil })
	p, err := c.build(t, all, nil, time.Now(), nil)
	if err != nil {
		return nil, err
	}
	c.place(&p)
	if info != nil {
		*info = *p.info
	}
	return &wire.Delivery{
		Queue: p.info.Queue, Partition: p.info.Partition, Partitions: c.routes.Count(p.info.Queue),
		ID: p.id, Msg: p.msg, At: p.at, In: p.in, Unique: p.unique, UniqueTTL: p.uttl,
	}, nil
}

// runFlow runs a flow script with key (its home's hash tag) and args and
// returns its integer reply.
func (c *Client) runFlow(ctx context.Context, s *rcall.Script, key string, args []any) (int64, error) {
	var code int64
	err := rcall.Do(ctx, c.rdb, func() error {
		var err error
		code, err = s.Run(ctx, c.rdb, []string{key}, args...).Int64()
		return err
	})
	if err != nil {
		return 0, redisError(err) // the call may still be running and set code
	}
	return code, nil
}

// flowEnv returns what the flow package needs of this client.
func (c *Client) flowEnv() *flow.Env {
	return &flow.Env{RDB: c.rdb, Prefix: c.cfg.Prefix, ShardSize: c.cfg.ShardSize, FeedSize: c.cfg.FeedSize, IDTTL: c.cfg.IDTTL}
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
