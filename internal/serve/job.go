package serve

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// Job is one leased task as the engine keeps it while it runs: its
// lease, and the handle through which the task's handler writes its
// progress, result and steps under it. What a handler reads of the task
// comes to Config.Handle beside it, as Fields, and lives in worker.Task
// alone: a job is small, as the engine allocates one per task.
type Job struct {
	// View is what package worker made of the job, its *worker.Task: the
	// job's context answers it for ViewKey.
	View any

	sid       string // the ID's stored form (wire.StoredID), for the scripts
	e         *Engine
	p         *part
	token     int64
	retention time.Duration
	unique    string
	flow      string // wire.FlowRef text; "" = none
}

// Fields are what a handler reads of a job, passed by value to
// Config.Handle.
type Fields struct {
	ID         string
	Type       string
	Queue      string
	Partition  int
	Payload    []byte
	Raw        bool
	Attempt    int
	MaxRetry   int
	EnqueuedAt time.Time
	StartedAt  time.Time
	Deadline   time.Time
	Headers    map[string]string
	// Granted is how many attempts operators granted beyond MaxRetry+1
	// (Inspector.RunTask).
	Granted int
}

// id returns the job's ID as users see it, for the logs.
func (j *Job) id() string { return wire.PublicID(j.sid) }

// MaxPayloadSize is the cap on the job's result and steps' values.
func (j *Job) MaxPayloadSize() int { return j.e.cfg.MaxPayloadSize }

// WriteProgress stores the job's progress report.
func (j *Job) WriteProgress(ctx context.Context, percent int, msg string, at time.Time) error {
	msg, err := j.e.codec.WrapString(msg, j.sid, envelope.Progress)
	if err != nil {
		return err
	}
	b, err := msgpack.Marshal(&wire.Progress{Percent: percent, Message: msg, At: at.UnixMilli()})
	if err != nil {
		return err
	}
	return j.e.rdb.HSet(ctx, j.p.k.Progress(), j.sid, b).Err()
}

// WriteResult stores the job's result, compressed or encrypted as the
// codec says.
func (j *Job) WriteResult(ctx context.Context, b []byte) error {
	b, err := j.e.codec.Wrap(nil, b, j.sid, envelope.Result)
	if err != nil {
		return err
	}
	return j.e.rdb.HSet(ctx, j.p.k.Result(), j.sid, b).Err()
}

// ReadSteps returns the steps earlier attempts of the job finished, their
// values opened.
func (j *Job) ReadSteps(ctx context.Context) (wire.Steps, error) {
	b, err := j.e.rdb.HGet(ctx, j.p.k.Steps(), j.sid).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the steps: %w", err)
	}
	steps, err := wire.DecodeSteps(b)
	if err != nil {
		return nil, err
	}
	for i := range steps {
		if steps[i].Result, err = j.e.codec.Open(steps[i].Result, j.sid, envelope.Step, j.e.cfg.MaxPayloadSize); err != nil {
			return nil, fmt.Errorf("step %q: %w", steps[i].Name, err)
		}
	}
	return steps, nil
}

// WriteSteps replaces the job's finished steps with steps, under its
// lease: written is false when the lease was lost.
func (j *Job) WriteSteps(ctx context.Context, steps wire.Steps) (written bool, err error) {
	stored := make(wire.Steps, len(steps))
	copy(stored, steps)
	for i := range stored {
		if stored[i].Result, err = j.e.codec.Wrap(nil, stored[i].Result, j.sid, envelope.Step); err != nil {
			return false, fmt.Errorf("step %q: %w", stored[i].Name, err)
		}
	}
	enc, err := wire.EncodeSteps(stored)
	if err != nil {
		return false, err
	}
	n, err := script.Step.Run(ctx, j.e.rdb, []string{j.p.k.State(), j.p.k.Steps()}, j.sid, j.token, enc).Int()
	return n == 1, err
}

// Workflow returns the workflow the task is a node of, a chain's or a
// batch's among them, and its node's name, as queue.TaskInfo has them;
// both "" for a task of no workflow.
func (j *Job) Workflow() (id, node string) { return home.Place(j.flow, j.sid) }

// PreviousResult returns the result the link before the task wrote
// (SetResult), in a chain (queue.Chain): the result of node k-1 for node
// k. It is nil when the task is no link after the first, or the link
// before wrote none.
func (j *Job) PreviousResult(ctx context.Context) ([]byte, error) {
	r, err := wire.ParseFlowRef(j.flow)
	if j.flow == "" || err != nil {
		return nil, nil
	}
	if r.Kind == 'c' {
		return j.chainResult(ctx, r)
	}
	k, err := strconv.Atoi(r.Node)
	if r.Kind != 'w' || err != nil || k < 2 || j.e.flows == nil || j.e.flows.insp == nil {
		return nil, nil
	}
	v, err := j.e.flows.insp.NodeResult(ctx, keys.LongID(r.ID), strconv.Itoa(k-1))
	if err != nil {
		return nil, fmt.Errorf("previous result: %w", err)
	}
	return v, nil
}

// chainResult reads the previous link's result in a chain that 0.1.0
// enqueued, kept in the chain's own record.
func (j *Job) chainResult(ctx context.Context, r wire.FlowRef) ([]byte, error) {
	if r.Link < 2 {
		return nil, nil
	}
	h := keys.Home(j.e.cfg.Prefix, r.Home)
	vals, err := j.e.rdb.HMGet(ctx, h.Chain(r.ID), fmt.Sprintf("r:%d", r.Link-1), fmt.Sprintf("i:%d", r.Link-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("previous result: %w", err)
	}
	b, _ := vals[0].(string)
	if b == "" {
		return nil, nil
	}
	// compressed or encrypted under the previous link's ID; with a ring,
	// a plain one is refused (AllowPlaintext)
	sid, _ := vals[1].(string)
	v, err := j.e.codec.Open([]byte(b), sid, envelope.Result, j.e.cfg.MaxPayloadSize)
	if err != nil {
		return nil, fmt.Errorf("previous result: %w", err)
	}
	return v, nil
}

// ParentResult returns the result that parent, a node of the task's
// workflow, recorded when it succeeded (SetResult): nil when it wrote
// none, or did not succeed (a child over an EdgeRun edge runs after a
// dead parent). A task in no workflow, or a parent the workflow lacks, is
// queue.ErrInvalid.
func (j *Job) ParentResult(ctx context.Context, parent string) ([]byte, error) {
	id := j.graph()
	if id == "" || j.e.flows == nil || j.e.flows.insp == nil {
		return nil, fmt.Errorf("%w: it is in no workflow", queue.ErrInvalid)
	}
	return j.e.flows.insp.NodeResult(ctx, id, parent)
}

// ExtendWorkflow adds w's nodes to the task's workflow, as
// queue.Client.ExtendWorkflow does: fan-out from inside a node. A new node
// may name this task's node as its parent: it waits for this task to
// succeed. A task in no workflow is queue.ErrInvalid.
func (j *Job) ExtendWorkflow(ctx context.Context, w *queue.Workflow) error {
	id := j.graph()
	if id == "" || j.e.flows == nil || j.e.flows.client == nil {
		return fmt.Errorf("%w: it is in no workflow", queue.ErrInvalid)
	}
	return j.e.flows.client.ExtendWorkflow(ctx, id, w)
}

// graph returns the ID of the workflow the task is a node of, "" for a
// member of a batch 0.1.0 created, which has no graph to read or extend.
func (j *Job) graph() string {
	if strings.HasPrefix(j.flow, "b") {
		return ""
	}
	id, _ := j.Workflow()
	return id
}
