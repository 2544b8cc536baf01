package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// Workflow bounds, as Workflow's doc gives them, so a running workflow
// takes bounded memory at its home. A batch's member costs one field of
// its workflow's hash once enqueued, so far more fit.
const (
	maxWorkflowNodes = 10000
	maxWorkflowEdges = 100000
	maxNodeNameLen   = 128
	maxBatchNodes    = 1_000_000
)

// EdgePolicy says what a child does when its parent does not succeed:
// the parent went dead, or was itself failed, skipped or cancelled.
type EdgePolicy string

// Edge policies.
const (
	// EdgeFail fails the child, and the nodes below it follow their own
	// edges. It is the policy of an Edge that names none.
	EdgeFail EdgePolicy = "fail"
	// EdgeRun runs the child anyway, once its other parents allow it.
	EdgeRun EdgePolicy = "run"
	// EdgeSkip skips the child: it never runs, and the nodes below it
	// follow their own edges.
	EdgeSkip EdgePolicy = "skip"
)

// Edge is a dependency between a node and its parent: the child becomes
// pending once the parent succeeded, and OnDead says what the child does
// when the parent does not succeed. The zero OnDead is EdgeFail. An edge
// given to Workflow.Add names the other end: Parent for an edge into the
// node added (After), or Child for an edge out of it (Before).
type Edge struct {
	Parent string
	Child  string
	OnDead EdgePolicy
}

// After returns the edge from parent with EdgeFail: the node runs after
// parent succeeded, and fails when parent does not.
func After(parent string) Edge { return Edge{Parent: parent, OnDead: EdgeFail} }

// Before returns the edge to child with EdgeFail: child runs after the
// node succeeded, and fails when the node does not. In an extension, child
// may be a node of the active workflow that still waits, such as a join
// recorded before the fan-out that feeds it.
func Before(child string) Edge { return Edge{Child: child, OnDead: EdgeFail} }

// Workflow is a graph of tasks built in memory: nodes with names, and
// edges from parents to children. Client.EnqueueWorkflow records it in
// one atomic call; Client.ExtendWorkflow adds nodes to an active one.
// A workflow, with every extension, holds at most 10,000 nodes and
// 100,000 edges; a node name is 1 to 128 bytes of UTF-8 without spaces
// or control characters.
type Workflow struct {
	nodes []workflowNode
	names map[string]int
	err   error
	shape *batchShape // a batch's (queue/batch.go); nil for a plain graph
}

type workflowNode struct {
	name  string
	task  *Task  // nil: a taskless node (a batch's gate, a nested batch)
	id    string // its task's stored ID; "": generated
	edges []Edge
}

// NewWorkflow returns an empty workflow.
func NewWorkflow() *Workflow {
	return &Workflow{names: map[string]int{}}
}

// Add adds task t as node name, with edges to its parents (After) and
// its children (Before). The other end of an edge is a node added to w,
// before or after this one, or a node of the active workflow w extends.
// A node without parents is a root: it is enqueued at once.
// Add reports nothing: the first invalid node is the workflow's error,
// from EnqueueWorkflow or ExtendWorkflow.
func (w *Workflow) Add(name string, t *Task, edges ...Edge) {
	if w.err == nil && home.IsBatchNode(name) {
		w.err = fmt.Errorf("%w: node name %q: a name starting with a dot is a batch's", errInvalidWorkflow, name)
		return
	}
	w.add(name, t, edges)
}

// add adds node name as Add does; a nil task makes a taskless node of a
// batch, which a call or a nested batch moves.
func (w *Workflow) add(name string, t *Task, edges []Edge) {
	if w.err == nil {
		w.err = w.refuse(name, t, edges)
	}
	if w.err == nil {
		w.names[name] = len(w.nodes)
		w.nodes = append(w.nodes, workflowNode{name: name, task: t, edges: slices.Clone(edges)})
	}
}

// refuse returns why node name cannot be added to w, or nil.
func (w *Workflow) refuse(name string, t *Task, edges []Edge) error {
	_, dup := w.names[name]
	switch {
	case name == "":
		return fmt.Errorf("%w: empty node name", errInvalidWorkflow)
	case len(name) > maxNodeNameLen:
		return fmt.Errorf("%w: node name of %d bytes, limit %d", errInvalidWorkflow, len(name), maxNodeNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: node name %q is not UTF-8", errInvalidWorkflow, name)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		return fmt.Errorf("%w: node name %q has a space or control character", errInvalidWorkflow, name)
	case dup:
		return fmt.Errorf("%w: node %q added twice", errInvalidWorkflow, name)
	case t == nil && w.shape == nil:
		return fmt.Errorf("%w: node %q has no task", errInvalidWorkflow, name)
	}
	seen := map[string]bool{}
	for _, e := range edges {
		other := e.Parent + e.Child
		switch {
		case e.OnDead != "" && e.OnDead != EdgeFail && e.OnDead != EdgeRun && e.OnDead != EdgeSkip:
			return fmt.Errorf("%w: node %q: edge with %q has policy %q; want fail, run or skip", errInvalidWorkflow, name, other, e.OnDead)
		case (e.Parent == "") == (e.Child == ""):
			return fmt.Errorf("%w: node %q: an edge names a parent or a child, not %q and %q", errInvalidWorkflow, name, e.Parent, e.Child)
		case other == name:
			return fmt.Errorf("%w: node %q is its own parent", errInvalidWorkflow, name)
		case seen[e.Parent+"\x00"+e.Child]:
			return fmt.Errorf("%w: node %q names %q twice", errInvalidWorkflow, name, other)
		}
		seen[e.Parent+"\x00"+e.Child] = true
	}
	return nil
}

// plan is a checked workflow: per node, its parents and the existing
// nodes it is a parent of (Before edges to nodes outside w); a Before
// edge between two nodes of w counts as its child's parent.
type plan struct {
	parents [][]Edge
	before  [][]Edge
}

// check refuses an empty or oversized w, and a cycle among its nodes;
// nodes not in w must be nodes of the workflow it extends (the home
// checks those, and the cycles Before edges into them could make).
func (w *Workflow) check() (*plan, error) {
	if w != nil && w.err != nil {
		return nil, w.err
	}
	if w == nil || len(w.nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", errInvalidWorkflow)
	}
	p := &plan{parents: make([][]Edge, len(w.nodes)), before: make([][]Edge, len(w.nodes))}
	edges := 0
	for i, n := range w.nodes {
		for _, e := range n.edges {
			edges++
			if e.Parent != "" {
				p.parents[i] = append(p.parents[i], e)
				continue
			}
			if c, ok := w.names[e.Child]; ok {
				p.parents[c] = append(p.parents[c], Edge{Parent: n.name, OnDead: e.OnDead})
				continue
			}
			p.before[i] = append(p.before[i], e)
		}
	}
	if len(w.nodes) > w.maxNodes() || edges > maxWorkflowEdges {
		return nil, fmt.Errorf("%w: %d nodes and %d edges, limits %d and %d", errInvalidWorkflow, len(w.nodes), edges, w.maxNodes(), maxWorkflowEdges)
	}
	// Kahn's algorithm over the edges inside w: what is left is a cycle
	indeg := make([]int, len(w.nodes))
	children := make([][]int, len(w.nodes))
	for i := range w.nodes {
		seen := map[string]bool{}
		for _, e := range p.parents[i] {
			if seen[e.Parent] {
				return nil, fmt.Errorf("%w: node %q names %q twice", errInvalidWorkflow, w.nodes[i].name, e.Parent)
			}
			seen[e.Parent] = true
			if pi, ok := w.names[e.Parent]; ok {
				indeg[i]++
				children[pi] = append(children[pi], i)
			}
		}
	}
	var ready []int
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	for k := 0; k < len(ready); k++ {
		for _, c := range children[ready[k]] {
			if indeg[c]--; indeg[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	for i, d := range indeg {
		if d > 0 {
			return nil, fmt.Errorf("%w: a cycle runs through node %q", errInvalidWorkflow, w.nodes[i].name)
		}
	}
	return p, nil
}

// EnqueueWorkflow records w as a new workflow at its home and enqueues its
// roots; it returns the workflow's ID. The call is atomic: a cycle, an
// unknown parent or a workflow over the bounds is ErrInvalid, and
// nothing is written; no node runs before every node is recorded. When
// the workflow was recorded but its roots could not be enqueued, it
// returns the ID with the error: workers enqueue them after a grace of
// 15s. Each task's own options give its queue and the rest; TaskID and
// Unique are refused, as for chains.
func (c *Client) EnqueueWorkflow(ctx context.Context, w *Workflow) (string, error) {
	id := newFlowID("")
	recorded, _, err := c.recordWorkflow(ctx, id, w, "new")
	if !recorded {
		id = ""
	}
	return id, err
}

// ExtendWorkflow adds w's nodes to the active workflow id: fan-out. A
// parent may be a node of w or of the workflow; a child of a node that
// already succeeded is enqueued at once. From a handler of one of the
// workflow's tasks, worker.Task.ExtendWorkflow does the same. A finished
// or cancelled workflow is ErrFinished.
//
// An extension whose nodes all exist already is a repeat, from a handler
// that runs again: it succeeds and changes nothing. One that reuses some
// names is ErrInvalid.
func (c *Client) ExtendWorkflow(ctx context.Context, id string, w *Workflow) error {
	_, _, err := c.recordWorkflow(ctx, id, w, extendMode(ctx, id))
	return err
}

// extendMode is workflow_add's mode for an extension of workflow id:
// from one of its own tasks, a batch's closed gate does not refuse it.
func extendMode(ctx context.Context, id string) string {
	if home.MemberOf(ctx) == id {
		return "extend in"
	}
	return "extend"
}

// recordWorkflow records w as workflow id (mode "new"), or adds it to id
// (mode "extend" or "extend in"), and delivers the nodes released; it
// reports whether w was recorded, with the infos of its nodes' tasks
// (nil for a taskless node).
func (c *Client) recordWorkflow(ctx context.Context, id string, w *Workflow, mode string) (bool, []*TaskInfo, error) {
	pl, err := w.check()
	if err != nil {
		return false, nil, err
	}
	if err := redisError(c.gate.Pass(ctx, c.rdb, c.cfg.Prefix)); err != nil {
		return false, nil, fmt.Errorf("workflow %s: %w", id, err)
	}
	hn := keys.HomeOf(id)
	h := keys.Home(c.cfg.Prefix, hn)
	// on one server, a node is enqueued by the script that releases it;
	// on a cluster, its queue is in another slot: through the outbox
	direct := ""
	if rcall.OneServer(c.rdb) {
		direct = fmt.Sprintf("%d %d", c.cfg.ShardSize, c.cfg.FeedSize)
	}
	args := []any{h.H, "", keys.ShortID(id), c.cfg.WorkflowRetention.Milliseconds(), flowGrace.Milliseconds(), mode, maxWorkflowNodes, maxWorkflowEdges, direct}
	var fresh *freshGraph
	if mode == "new" {
		if fresh, err = w.fresh(pl, id); err != nil {
			return false, nil, err
		}
		args = append(args, len(w.nodes), fresh.edges, fresh.roots)
		if sh := w.shape; sh != nil {
			args = append(args, strings.Join(sh.join, " "), w.maxNodes(), home.Gate, keys.ShortID(sh.parent), sh.node, sh.inside, sh.desc)
		}
	}
	byID := make(map[string]*wire.Delivery, len(w.nodes))
	infos := make([]*TaskInfo, len(w.nodes))
	var fields []any // a new graph's, as it will be stored
	for i, n := range w.nodes {
		// a taskless node (a new batch's gate) sends nothing when released
		var meta, e any = home.Taskless, ""
		if n.task != nil {
			ref := wire.FlowRef{Kind: 'w', Home: hn, ID: keys.ShortID(id), Node: n.name}.String()
			d, info, err := c.delivery(ctx, n.task, n.id, ref)
			if err != nil {
				return false, nil, fmt.Errorf("workflow node %q: %w", n.name, err)
			}
			infos[i] = info
			// released straight into its queue, a node's task is its
			// message, after its route when the route takes the common
			// layout (wire.NodeTask), else routed by its record, which Lua
			// reads without decoding the message; through the outbox, its
			// delivery
			route := []any{d.ID, info.Queue, info.Type, d.Partition}
			e = d.Msg
			if direct != "" {
				route = append(route, d.Partitions, d.At, d.In)
				if d.At == 0 && d.In == 0 {
					if t, ok := wire.NodeTask(d.ID, d.Queue, d.Partition, d.Msg); ok {
						e = t
					}
				}
			} else if e, err = wire.EncodeDelivery(d); err != nil {
				return false, nil, err
			}
			meta, _ = msgpack.Marshal(route) // strings and integers always encode
			byID[d.ID] = d
		}
		if fresh != nil {
			fields = append(fields, "m:"+n.name, meta, "e:"+n.name, e, "s:"+n.name, fresh.states[i])
			if kids := fresh.kids[i]; len(kids) > 0 {
				fields = append(fields, "c:"+n.name, strings.Join(kids, " "))
			}
			continue
		}
		args = append(args, n.name, meta, e, edgesArg(pl.parents[i]), edgesArg(pl.before[i]))
	}
	reply, err := doValue(ctx, c.rdb, func() ([]any, error) {
		if fresh != nil {
			return c.recordFresh(ctx, h.Workflow(id), fields, args)
		}
		return script.WorkflowAdd.Run(ctx, c.rdb, []string{h.Workflow(id)}, args...).Slice()
	})
	if err != nil {
		return false, nil, fmt.Errorf("workflow %s: record: %w", id, redisError(err))
	}
	if err := workflowCode(id, reply); err != nil {
		return false, nil, err
	}
	if direct != "" {
		if err := c.registerQueues(ctx, byID); err != nil {
			return true, infos, fmt.Errorf("workflow %s: recorded, but its queues are not registered: %w", id, err)
		}
	}
	// the nodes the script put into the outbox: all of them on a cluster
	var ds []*wire.Delivery
	for _, v := range reply[1:] {
		if s, ok := v.(string); ok && byID[s] != nil {
			ds = append(ds, byID[s])
		}
	}
	env := flowEnv(c.rdb, &c.cfg)
	if err := rcall.Do(ctx, c.rdb, func() error { return env.DeliverEntries(ctx, hn, ds) }); err != nil {
		// recorded: workers deliver them after the grace
		return true, infos, fmt.Errorf("workflow %s: enqueue its tasks (recorded; workers deliver them later): %w", id, err)
	}
	return true, infos, nil
}

// stagedFieldsTTL bounds how long a new workflow's fields stay in their
// staging key when the script after them did not run (NOSCRIPT): the
// transaction is sent again at once and writes them anew.
const stagedFieldsTTL = time.Minute

// recordFresh records a new workflow in one transaction: an HSET of its
// fields into a staging key beside W, then workflow_add, which renames it
// to W (or deletes it when the ID is taken) and releases the roots. Sent
// as the script's arguments, each field would be copied into Lua and out
// again; as a plain HSET, Redis stores it as it comes.
func (c *Client) recordFresh(ctx context.Context, W string, fields, args []any) ([]any, error) {
	staged := W + ":new"
	run := func() (*redis.Cmd, error) {
		var cmd *redis.Cmd
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < len(fields); i += 2000 {
				p.HSet(ctx, staged, fields[i:min(i+2000, len(fields))]...)
			}
			p.PExpire(ctx, staged, stagedFieldsTTL)
			cmd = script.WorkflowAdd.EvalSha(ctx, p, []string{W, staged}, args...)
			return nil
		})
		return cmd, err
	}
	cmd, err := run()
	if rcall.IsNoScript(err) {
		if err := script.WorkflowAdd.Load(ctx, c.rdb); err != nil {
			return nil, err
		}
		cmd, err = run()
	}
	if err != nil {
		return nil, err
	}
	return cmd.Slice()
}

// registerQueues writes the registry entries of the nodes' queues that
// this client has not written lately: a delivery through the outbox
// writes them, a release straight into a queue does not.
func (c *Client) registerQueues(ctx context.Context, nodes map[string]*wire.Delivery) error {
	fresh := map[string]int{}
	for _, d := range nodes {
		if !c.routes.Registered(d.Queue) {
			fresh[d.Queue] = d.Partitions
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	pairs := make([]any, 0, 2*len(fresh))
	for q, n := range fresh {
		pairs = append(pairs, q, n)
	}
	if err := rcall.Do(ctx, c.rdb, func() error { return c.rdb.HSet(ctx, keys.Queues(c.cfg.Prefix), pairs...).Err() }); err != nil {
		return redisError(err)
	}
	c.routes.Remember(fresh)
	return nil
}

// freshGraph is a new workflow's graph as its home stores it
// (include/wf_names.lua): per node, its state, its count of parents, and
// its children, each name after its edge's letter, in upper case when
// the node is the child's only parent (stored separated by spaces: see
// childList); the roots' names; the edges.
type freshGraph struct {
	states []string
	kids   [][]string
	roots  []byte
	edges  int
}

// fresh builds the stored graph of w, a new workflow checked by check
// (plan pl) as workflow id: with no workflow to extend, every parent is a
// node of w, and a node that is not is refused here. The
// home writes it as it comes, with no per-node work in its script.
func (w *Workflow) fresh(pl *plan, id string) (*freshGraph, error) {
	g := &freshGraph{states: make([]string, len(w.nodes)), kids: make([][]string, len(w.nodes))}
	var roots []string
	for i, n := range w.nodes {
		if len(pl.before[i]) > 0 {
			return nil, fmt.Errorf("%w: node %q names %q, which is no node of workflow %s", errInvalidWorkflow, n.name, pl.before[i][0].Child, id)
		}
		for _, e := range pl.parents[i] {
			p, ok := w.names[e.Parent]
			if !ok {
				return nil, fmt.Errorf("%w: node %q names %q, which is no node of workflow %s", errInvalidWorkflow, n.name, e.Parent, id)
			}
			code := edgeCode(e.OnDead)
			if len(pl.parents[i]) == 1 {
				// its only parent: the parent's success releases it unread
				code = strings.ToUpper(code)
			}
			g.kids[p] = append(g.kids[p], code+n.name)
		}
		g.edges += len(pl.parents[i])
		g.states[i] = strconv.Itoa(len(pl.parents[i]))
		if w.shape != nil && slices.ContainsFunc(w.shape.join, func(j string) bool { return j[1:] == n.name }) {
			// every other node is its parent, with no edge stored
			g.states[i] = strconv.Itoa(len(w.nodes) - len(w.shape.join))
			continue
		}
		if len(pl.parents[i]) == 0 {
			roots = append(roots, n.name)
		}
	}
	g.roots, _ = msgpack.Marshal(roots) // strings always encode
	return g, nil
}

// edgesArg encodes edges for workflow_add: {{other end, policy}, ...},
// and none as nothing: most nodes have no edge of one kind.
func edgesArg(edges []Edge) []byte {
	if len(edges) == 0 {
		return nil
	}
	out := make([][]string, len(edges))
	for i, e := range edges {
		// an edge names one end, the other one
		out[i] = []string{e.Parent + e.Child, edgeCode(e.OnDead)}
	}
	b, _ := msgpack.Marshal(out) // strings always encode
	return b
}

// edgeCodes are the letters a workflow stores for the edge policies but
// EdgeFail, whose "f" is the default both ways.
var edgeCodes = map[EdgePolicy]string{EdgeRun: "r", EdgeSkip: "k"}

func edgeCode(p EdgePolicy) string { return cmp.Or(edgeCodes[p], "f") }

func edgePolicy(code string) EdgePolicy {
	for p, c := range edgeCodes {
		if c == code {
			return p
		}
	}
	return EdgeFail
}

// workflowCode turns a workflow script's reply into an error.
func workflowCode(id string, reply []any) error {
	if len(reply) == 0 {
		return fmt.Errorf("workflow %s: empty reply", id)
	}
	code, _ := reply[0].(int64)
	// the code's details, names or counts; absent ones read as zero
	var str [3]string
	var num [3]int64
	for i := 1; i < min(3, len(reply)); i++ {
		str[i], _ = reply[i].(string)
		num[i], _ = reply[i].(int64)
	}
	var err error
	switch code {
	case codes.FlowCreated:
		return nil
	case codes.FlowIDTaken:
		return fmt.Errorf("workflow %s: ID taken", id) // a UUIDv7 collision: never
	case codes.FlowNotFound:
		err = errWorkflowNotFound
	case codes.FlowFinished:
		err = errWorkflowFinished
	case codes.FlowClosed:
		err = errWorkflowCancelled
		if str[1] != "" {
			// a batch's gate succeeded: closed to Adds from outside it
			err = errBatchClosed
		}
	case codes.FlowNameTaken:
		return fmt.Errorf("%w: workflow %s already has a node %q", errInvalidWorkflow, id, str[1])
	case codes.FlowUnknownParent:
		return fmt.Errorf("%w: node %q names %q, which is no node of workflow %s", errInvalidWorkflow, str[1], str[2], id)
	case codes.FlowNotWaiting:
		if str[1] != "" {
			return fmt.Errorf("%w: node %q is to come before %q, which no longer waits in workflow %s", errInvalidWorkflow, str[1], str[2], id)
		}
		// a batch's callback went out: nothing may join it now
		err = errBatchFinished
	case codes.FlowCycle:
		return fmt.Errorf("%w: node %q before %q makes a cycle in workflow %s", errInvalidWorkflow, str[1], str[2], id)
	case codes.FlowTooBig:
		return fmt.Errorf("%w: workflow %s would have %d nodes and %d edges, limits %d and %d", errInvalidWorkflow, id, num[1], num[2], maxWorkflowNodes, maxWorkflowEdges)
	default:
		return fmt.Errorf("workflow %s: unexpected reply code %d", id, code)
	}
	return fmt.Errorf("workflow %s: %w", id, err)
}
