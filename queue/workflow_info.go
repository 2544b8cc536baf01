package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// WorkflowNode is one node of a workflow.
type WorkflowNode struct {
	Name   string
	TaskID string
	Queue  string
	Type   string
	// State is StateWaiting, StateEnqueued, StateSucceeded, StateDead,
	// StateFailed, StateSkipped or StateCancelled.
	State State
	// Parents are the node's edges, in the order they were added.
	Parents []Edge
	// Error is the error a dead node's task died with.
	Error string
}

// WorkflowInfo is a workflow's progress, as its home keeps it.
type WorkflowInfo struct {
	ID string
	// State is StateActive, StateSucceeded, StateFailed or
	// StateCancelled.
	State State
	// Why says why the workflow failed or was cancelled: the last node
	// that died, and its error.
	Why string
	// Total counts the nodes, Edges their parents, and Counts the nodes
	// in each state; a batch's gate and callbacks among them.
	Total  int
	Edges  int
	Counts map[State]int
	// Nodes in the order they were added, extensions last. WorkflowSummary
	// leaves it empty but for a batch's gate and callbacks, without
	// their parents.
	Nodes []WorkflowNode
	// Description is a batch's (BatchOptions.Description).
	Description string
	// Parent is the batch a nested batch is a member of
	// (BatchOptions.Parent); "" when none.
	Parent     string
	CreatedAt  time.Time
	FinishedAt time.Time
	join       string // a batch's callbacks (include/wf_joined.lua)
	old        bool   // a batch 0.1.0 created (batch_old.go)
}

// Node returns the node called name, or nil.
func (w *WorkflowInfo) Node(name string) *WorkflowNode {
	for i := range w.Nodes {
		if w.Nodes[i].Name == name {
			return &w.Nodes[i]
		}
	}
	return nil
}

// nodeState reads a node's stored state: a letter, followed while it
// waits by its parents' effects, or a waiting node's count of unfinished
// parents alone (include/wf_names.lua).
func nodeState(stored string) State {
	if stored != "" && stored[0] >= '0' && stored[0] <= '9' {
		return StateWaiting
	}
	code := stored[:min(1, len(stored))]
	for _, s := range nodeStates {
		if s.code == code {
			return s.state
		}
	}
	return State(code)
}

// nodeStates are the node states, with their stored letters.
var nodeStates = []struct {
	code  string
	state State
}{{"w", StateWaiting}, {"p", StateEnqueued}, {"s", StateSucceeded}, {"d", StateDead}, {"f", StateFailed}, {"k", StateSkipped}, {"x", StateCancelled}}

// workflowState reads a workflow's stored state, which Redis spells
// "running" for StateActive, so that what is stored stays as it was.
func workflowState(stored string) State {
	if stored == "running" {
		return StateActive
	}
	return State(stored)
}

// batchNodes are a batch's own nodes, which WorkflowSummary reads.
var batchNodes = []string{home.Gate, home.OnSuccess, home.OnComplete}

// WorkflowSummary returns workflow id's state and its counts of nodes per
// state, without its nodes but a batch's gate and callbacks, in one round
// trip: a read that costs the same at any size, for lists of workflows.
// It reads a batch 0.1.0 created too, in two.
func (i *Inspector) WorkflowSummary(ctx context.Context, id string) (*WorkflowInfo, error) {
	key := keys.Home(i.cfg.Prefix, keys.HomeOf(id)).Workflow(id)
	fields := []string{"state", "why", "why_node", "why_id", "n", "edges", "created", "finished", "join", "desc", "up"}
	for _, s := range nodeStates {
		fields = append(fields, "cnt_"+s.code)
	}
	for _, n := range batchNodes {
		fields = append(fields, "s:"+n, "m:"+n)
	}
	vals, err := doValue(ctx, i.rdb, func() ([]any, error) { return i.rdb.HMGet(ctx, key, fields...).Result() })
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", id, err)
	}
	f := make(map[string]string, len(fields))
	for j, name := range fields {
		f[name], _ = vals[j].(string)
	}
	if f["state"] == "" {
		return i.oldBatch(ctx, id)
	}
	w := &WorkflowInfo{
		ID: id, State: workflowState(f["state"]), Why: f["why"],
		Total: atoi(f["n"]), Edges: atoi(f["edges"]), Counts: make(map[State]int, len(nodeStates)),
		Description: f["desc"], CreatedAt: msTime(int64(atoi(f["created"]))), FinishedAt: msTime(int64(atoi(f["finished"]))),
		join: f["join"],
	}
	if up, _, ok := strings.Cut(f["up"], " "); ok {
		w.Parent = keys.LongID(up)
	}
	if f["why_node"] != "" {
		w.Why = "node " + f["why_node"] + " is dead: " + i.openError(f["why"], f["why_id"])
	}
	for _, s := range nodeStates {
		w.Counts[s.state] = atoi(f["cnt_"+s.code])
	}
	// a batch's own nodes: no node of another workflow starts with a dot
	for _, name := range batchNodes {
		if f["s:"+name] != "" {
			n, _ := i.readNode(f, name) // a corrupt m: shows no task
			w.Nodes = append(w.Nodes, n)
		}
	}
	sortNodes(w.Nodes)
	return w, nil
}

// sortNodes sorts nodes by their task IDs: a flow task's ID is a
// generated UUIDv7, whose text sorts in creation order, and a taskless
// node's "" comes first.
func sortNodes(nodes []WorkflowNode) {
	slices.SortStableFunc(nodes, func(a, b WorkflowNode) int { return strings.Compare(a.TaskID, b.TaskID) })
}

// workflowScan is how many fields one HSCAN step of GetWorkflow asks for.
const workflowScan = 2000

// GetWorkflow returns workflow id's progress: its state and every node
// with its edges. It reads the workflow's hash but not its results: one
// round trip, then one per 2,000 fields (about 600 nodes, or 2,000 of a
// batch's members). For its state and counts alone, WorkflowSummary
// costs one round trip at any size. A batch is a workflow (NewBatch); one
// 0.1.0 created reads as one too, with what its record knows: its
// members' task IDs and states, its gate, and its callbacks.
func (i *Inspector) GetWorkflow(ctx context.Context, id string) (*WorkflowInfo, error) {
	w, err := i.WorkflowSummary(ctx, id)
	if err != nil {
		return nil, err
	}
	parents := map[string][]Edge{}
	if w.old {
		w.Nodes, err = i.oldBatchNodes(ctx, w)
	} else {
		w.Nodes, err = i.workflowNodes(ctx, w, parents)
	}
	if err != nil {
		return nil, fmt.Errorf("get workflow %s: %w", id, err)
	}
	// a batch's callbacks (join) have every other node as a parent, with
	// no field for it
	join := childList(w.join)
	for _, j := range join {
		for _, p := range w.Nodes {
			if !slices.ContainsFunc(join, func(k [2]string) bool { return k[0] == p.Name }) {
				parents[j[0]] = append(parents[j[0]], Edge{Parent: p.Name, OnDead: edgePolicy(j[1])})
				w.Edges++
			}
		}
	}
	sortNodes(w.Nodes)
	rank := make(map[string]int, len(w.Nodes))
	for k, n := range w.Nodes {
		rank[n.Name] = k
	}
	for k := range w.Nodes {
		// parents were read from children lists, in no order: put them
		// in the order of the nodes
		w.Nodes[k].Parents = parents[w.Nodes[k].Name]
		slices.SortFunc(w.Nodes[k].Parents, func(a, b Edge) int { return rank[a.Parent] - rank[b.Parent] })
	}
	return w, nil
}

// workflowNodes reads w's nodes from its hash, and their parents but a
// batch's callbacks' into parents.
func (i *Inspector) workflowNodes(ctx context.Context, w *WorkflowInfo, parents map[string][]Edge) ([]WorkflowNode, error) {
	key := keys.Home(i.cfg.Prefix, keys.HomeOf(w.ID)).Workflow(w.ID)
	f := map[string]string{}
	// the nodes' tasks, states, children and errors: not their results
	// (r:) and deliveries (e:)
	if err := i.scanHash(ctx, key, "[mscx]:*", func(k, v string) { f[k] = v }); err != nil {
		return nil, err
	}
	var nodes []WorkflowNode
	for field, v := range f {
		if name, ok := strings.CutPrefix(field, "s:"); ok {
			if n, ok := i.readNode(f, name); ok { // a corrupt m: hides the node
				nodes = append(nodes, n)
			}
		} else if parent, ok := strings.CutPrefix(field, "c:"); ok {
			for _, c := range childList(v) {
				parents[c[0]] = append(parents[c[0]], Edge{Parent: parent, OnDead: edgePolicy(c[1])})
			}
		}
	}
	return nodes, nil
}

// readNode reads node name from its workflow's fields f (s:, m:, x:); ok
// is false when its m: does not decode, and the node has no task then. A
// batch's member keeps no m: once enqueued: its name holds its task ID.
func (i *Inspector) readNode(f map[string]string, name string) (WorkflowNode, bool) {
	meta, err := nodeTask{id: home.MemberID(name)}, error(nil)
	if m, ok := f["m:"+name]; ok {
		meta, err = nodeMeta(m)
	}
	n := WorkflowNode{Name: name, State: nodeState(f["s:"+name]), TaskID: wire.PublicID(meta.id), Queue: meta.queue, Type: meta.typ}
	if e, ok := f["x:"+name]; ok {
		n.Error = i.openError(e, meta.id)
	}
	return n, err == nil
}

// doValue runs fn as rcall.Do does, and returns its value; none when
// ctx ended first, as fn may still be writing it.
func doValue[T any](ctx context.Context, rdb redis.UniversalClient, fn func() (T, error)) (T, error) {
	var v T
	if err := rcall.Do(ctx, rdb, func() (err error) { v, err = fn(); return err }); err != nil {
		var none T
		return none, err
	}
	return v, nil
}

// scanHash passes each field of hash key that matches match, with its
// value, to each: one round trip per workflowScan fields.
func (i *Inspector) scanHash(ctx context.Context, key, match string, each func(field, value string)) error {
	var cursor uint64
	for {
		var vals []string
		err := rcall.Do(ctx, i.rdb, func() error {
			var err error
			vals, cursor, err = i.rdb.HScan(ctx, key, cursor, match, workflowScan).Result()
			return err
		})
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(vals); j += 2 {
			each(vals[j], vals[j+1])
		}
		if cursor == 0 {
			return nil
		}
	}
}

// openError opens an error a node died with (Config.EncryptErrors): one
// encrypted under a key the ring lacks reads "(encrypted)". sid is the
// stored ID of the task that wrote it.
func (i *Inspector) openError(e, sid string) string {
	if !envelope.Wrapped([]byte(e)) {
		return e
	}
	v, err := i.codec.Open([]byte(e), sid, envelope.Error, i.cfg.MaxPayloadSize)
	if err != nil {
		return "(encrypted)"
	}
	return string(v)
}

// CancelWorkflow cancels workflow id: nodes that have not run are
// cancelled, pending ones are deleted, and running ones are asked to stop
// (CancelTask). Their outcomes still arrive and release nothing. Once
// every node has finished, the workflow is cancelled and expires after
// Config.WorkflowRetention. A finished workflow is ErrFinished.
// Stopping the enqueued nodes takes two round trips however many there
// are, and one more per node scheduled or retrying.
func (i *Inspector) CancelWorkflow(ctx context.Context, id string) error {
	h := keys.Home(i.cfg.Prefix, keys.HomeOf(id))
	reply, err := doValue(ctx, i.rdb, func() ([]any, error) {
		return script.WorkflowCancel.Run(ctx, i.rdb, []string{h.Workflow(id)}, h.H, "").Slice()
	})
	if err != nil {
		return fmt.Errorf("cancel workflow %s: %w", id, redisError(err))
	}
	if err := workflowCode(id, reply); err != nil {
		return err
	}
	var tasks []nodeTask
	for _, v := range reply[1:] {
		s, _ := v.(string)
		if m, err := nodeMeta(s); err == nil {
			tasks = append(tasks, m)
		}
	}
	if err := i.stopTasks(ctx, tasks); err != nil {
		return fmt.Errorf("cancel workflow %s: cancelled, but stopping its enqueued tasks: %w", id, err)
	}
	return nil
}

// nodeTask is a node's task as the workflow records it: stored ID, queue,
// type and the partition it was sent to.
type nodeTask struct {
	id, queue, typ string
	part           int
}

// nodeMeta reads a node's m: field: {task ID, queue, type, partition}.
// The partition is -1 in a record that lacks it.
func nodeMeta(v string) (nodeTask, error) {
	t, n := nodeTask{part: -1}, 0
	dec, err := wire.NewDecoder([]byte(v))
	if err == nil {
		n, err = dec.DecodeArrayLen()
	}
	if err == nil && n < 3 {
		err = fmt.Errorf("%d fields, want at least 3", n)
	}
	for j, f := range []*string{&t.id, &t.queue, &t.typ} {
		if err == nil {
			*f, err = dec.DecodeString()
			if err != nil {
				err = fmt.Errorf("field %d: %w", j+1, err)
			}
		}
	}
	if err == nil && n > 3 {
		t.part, err = dec.DecodeInt()
	}
	if err != nil {
		return nodeTask{}, fmt.Errorf("undecodable node record (%d bytes): %w", len(v), err)
	}
	return t, nil
}

// stopTasks deletes the pending tasks of tasks, in one pipelined round
// trip, and asks the running ones to stop, in another; those that are
// neither there (scheduled, retrying, or moved to another partition) are
// deleted one by one. Then it forwards the flow notifications of their
// queues once, as DeleteTask does.
func (i *Inspector) stopTasks(ctx context.Context, tasks []nodeTask) error {
	if len(tasks) == 0 {
		return nil
	}
	step := func(tasks []nodeTask, run func(p *rcall.Pipe, t nodeTask, k keys.Partition) *redis.Cmd) ([]nodeTask, error) {
		cmds := make([]*redis.Cmd, len(tasks))
		err := rcall.Do(ctx, i.rdb, func() error {
			return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
				for j, t := range tasks {
					if t.part >= 0 {
						cmds[j] = run(p, t, keys.For(i.cfg.Prefix, t.queue, t.part))
					}
				}
				return nil
			})
		})
		if err != nil {
			return nil, redisError(err)
		}
		var rest []nodeTask
		for j, t := range tasks {
			if cmds[j] == nil || cmds[j].Val() != int64(1) {
				rest = append(rest, t)
			}
		}
		return rest, nil
	}
	rest, err := step(tasks, func(p *rcall.Pipe, t nodeTask, k keys.Partition) *redis.Cmd {
		return p.Run(ctx, script.TombPending, []string{k.Tomb(), k.State(), k.Active(), k.FeedMsg()}, k.T, t.id)
	})
	if err == nil {
		rest, err = step(rest, func(p *rcall.Pipe, t nodeTask, k keys.Partition) *redis.Cmd {
			return p.Run(ctx, script.CancelTask, []string{k.Active(), k.Cancel()}, "", t.id, cancelKeep.Milliseconds())
		})
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range rest {
		tid := wire.PublicID(t.id)
		err := i.DeleteTask(ctx, t.queue, tid)
		if errors.Is(err, ErrTaskState) {
			err = i.CancelTask(ctx, t.queue, tid)
		}
		if err != nil && !errors.Is(err, ErrTaskState) && !errors.Is(err, errTaskNotFound) {
			errs = append(errs, fmt.Errorf("node task %s of %q: %w", tid, t.queue, err))
		}
	}
	queues := map[string]bool{}
	for _, t := range tasks {
		if !queues[t.queue] {
			queues[t.queue] = true
			var none error
			i.forwardFlowsAfter(ctx, t.queue, &none)
		}
	}
	return errors.Join(errs...)
}

// NodeResult returns the result node of workflow id recorded when it
// succeeded (worker.Task.SetResult); nil when it wrote none or has not
// succeeded. An unknown workflow is ErrNotFound, a node it lacks
// ErrInvalid. In a handler, worker.Task.ParentResult reads a parent's.
// One round trip.
func (i *Inspector) NodeResult(ctx context.Context, id, node string) ([]byte, error) {
	h := keys.Home(i.cfg.Prefix, keys.HomeOf(id))
	vals, err := doValue(ctx, i.rdb, func() ([]any, error) {
		return i.rdb.HMGet(ctx, h.Workflow(id), "m:"+node, "r:"+node, "state").Result()
	})
	if err != nil {
		return nil, fmt.Errorf("workflow %s: result of %q: %w", id, node, err)
	}
	if vals[2] == nil {
		return nil, fmt.Errorf("workflow %s: %w", id, errWorkflowNotFound)
	}
	meta, _ := vals[0].(string)
	if meta == "" {
		return nil, fmt.Errorf("%w: workflow %s has no node %q", errInvalidWorkflow, id, node)
	}
	res, _ := vals[1].(string)
	if res == "" {
		return nil, nil
	}
	m, err := nodeMeta(meta)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: node %q: %w", id, node, err)
	}
	// with a ring, a plain result is refused (AllowPlaintext)
	v, err := i.codec.Open([]byte(res), m.id, envelope.Result, i.cfg.MaxPayloadSize)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: result of %q: %w", id, node, err)
	}
	return v, nil
}

// childList reads a node's children list (c:): {name, edge code} per
// child. It is the children's names, each after its edge's letter,
// separated by spaces; the letter is in upper case when the node is the
// child's only parent; a workflow recorded before that kept it in msgpack,
// {{name, edge}, ...}, which opens with a byte of 0x90 or above.
func childList(v string) [][2]string {
	if v != "" && v[0] >= 0x80 {
		var cs [][]string
		if err := wire.Unmarshal([]byte(v), &cs); err != nil {
			return nil
		}
		out := make([][2]string, 0, len(cs))
		for _, c := range cs {
			if len(c) == 2 {
				out = append(out, [2]string{c[0], c[1]})
			}
		}
		return out
	}
	fields := strings.Fields(v)
	out := make([][2]string, 0, len(fields))
	for _, f := range fields {
		if len(f) > 1 {
			// upper case marks a child's only parent
			out = append(out, [2]string{f[1:], strings.ToLower(f[:1])})
		}
	}
	return out
}
