package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

func TestWorkflow(t *testing.T) {
	t.Parallel()
	t.Run("Diamond", func(t *testing.T) { t.Parallel(); testWorkflowDiamond(t, singleFlowRig(t)) })
	t.Run("EdgeFail", func(t *testing.T) { t.Parallel(); testWorkflowEdge(t, singleFlowRig(t), queue.EdgeFail) })
	t.Run("EdgeRun", func(t *testing.T) { t.Parallel(); testWorkflowEdge(t, singleFlowRig(t), queue.EdgeRun) })
	t.Run("EdgeSkip", func(t *testing.T) { t.Parallel(); testWorkflowEdge(t, singleFlowRig(t), queue.EdgeSkip) })
	t.Run("FanOut", func(t *testing.T) { t.Parallel(); testWorkflowFanOut(t, singleFlowRig(t)) })
	t.Run("Cancel", func(t *testing.T) { t.Parallel(); testWorkflowCancel(t, singleFlowRig(t)) })
	t.Run("DeadNodeResumes", func(t *testing.T) { t.Parallel(); testWorkflowDeadNodeResumes(t, singleFlowRig(t)) })
	t.Run("DeadLeafRetried", func(t *testing.T) { t.Parallel(); testWorkflowDeadLeafRetried(t, singleFlowRig(t)) })
	t.Run("FanOutRepeated", func(t *testing.T) { t.Parallel(); testWorkflowFanOutRepeated(t, singleFlowRig(t)) })
	t.Run("SealedResults", func(t *testing.T) { t.Parallel(); testWorkflowSealedResults(t) })
	t.Run("FanOutIntoJoin", func(t *testing.T) { t.Parallel(); testWorkflowFanOutIntoJoin(t, singleFlowRig(t)) })
}

// TestWorkflowsOnCluster: the workflow tests on a three-master cluster,
// nodes in queues whose partitions spread over the masters.
func TestWorkflowsOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	t.Run("Diamond", func(t *testing.T) { testWorkflowDiamond(t, newFlowRig(t, rdb)) })
	t.Run("EdgeSkip", func(t *testing.T) { testWorkflowEdge(t, newFlowRig(t, rdb), queue.EdgeSkip) })
	t.Run("FanOut", func(t *testing.T) { testWorkflowFanOut(t, newFlowRig(t, rdb)) })
	t.Run("DeadNodeResumes", func(t *testing.T) { testWorkflowDeadNodeResumes(t, newFlowRig(t, rdb)) })
	t.Run("FanOutIntoJoin", func(t *testing.T) { testWorkflowFanOutIntoJoin(t, newFlowRig(t, rdb)) })
}

// waitWorkflow waits until workflow id is in state want, and returns it.
func waitWorkflow(t *testing.T, r *flowRig, id string, want queue.State) *queue.WorkflowInfo {
	t.Helper()
	var wi *queue.WorkflowInfo
	var err error
	waitFor(t, 30*time.Second, "workflow "+string(want), func() bool {
		wi, err = r.insp.GetWorkflow(context.Background(), id)
		return err == nil && wi.State == want
	})
	return wi
}

// nodeStates lists a workflow's nodes as name=state, in the order they
// were added.
func nodeStates(wi *queue.WorkflowInfo) string {
	var out []string
	for _, n := range wi.Nodes {
		out = append(out, n.Name+"="+string(n.State))
	}
	return strings.Join(out, " ")
}

// testWorkflowDiamond: a -> b, c -> d over two queues. d starts only after
// both b and c succeeded, reads their results by name, and every node runs
// once.
func testWorkflowDiamond(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var mu sync.Mutex
	got := map[string]string{}
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "d" {
			for _, p := range []string{"b", "c"} {
				v, err := task.ParentResult(ctx, p)
				if err != nil {
					return err
				}
				mu.Lock()
				got[p] = string(v)
				mu.Unlock()
			}
		}
		return task.SetResult(ctx, []byte("from "+task.Type))
	}))
	wf := queue.NewWorkflow()
	wf.Add("a", queue.NewRawTask("a", nil, queue.In("fa")))
	wf.Add("b", queue.NewRawTask("b", nil, queue.In("fb")), queue.After("a"))
	wf.Add("c", queue.NewRawTask("c", nil, queue.In("fa")), queue.After("a"))
	wf.Add("d", queue.NewRawTask("d", nil, queue.In("fb")), queue.After("b"), queue.After("c"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateSucceeded)
	order := log.order()
	if len(order) != 4 || order[0] != "a" || order[3] != "d" {
		t.Fatalf("nodes ran as %v, want a first, d last, each once", order)
	}
	mu.Lock()
	if got["b"] != "from b" || got["c"] != "from c" {
		t.Fatalf("d read parent results %q", got)
	}
	mu.Unlock()
	if wi.Counts[queue.StateSucceeded] != 4 || wi.Total != 4 || wi.Counts[queue.StateWaiting]+wi.Counts[queue.StateEnqueued] != 0 || wi.Edges != 4 || wi.FinishedAt.IsZero() {
		t.Fatalf("workflow: %+v", wi)
	}
	d := wi.Node("d")
	if d == nil || len(d.Parents) != 2 || d.Parents[0] != queue.After("b") || d.Parents[1] != queue.After("c") || d.Queue != "fb" {
		t.Fatalf("node d: %+v", d)
	}
	res, err := r.insp.NodeResult(ctx, id, "d")
	if err != nil || string(res) != "from d" {
		t.Fatalf("NodeResult(d) = %q, %v", res, err)
	}
	home := keys.Home(r.qcfg.Prefix, keys.HomeOf(id))
	if ttl := r.rdb.PTTL(ctx, home.Workflow(id)).Val(); ttl <= 0 {
		t.Fatalf("a finished workflow's TTL is %v, want its retention", ttl)
	}
}

// testWorkflowEdge: parent p dies; child c has an edge of policy on p,
// and grandchild g depends on c with EdgeFail; a sibling s on p with
// EdgeRun always runs. fail: c and g fail; run: c runs, g runs; skip: c
// is skipped and g, over its fail edge, fails.
func testWorkflowEdge(t *testing.T, r *flowRig, policy queue.EdgePolicy) {
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "p" {
			return SkipRetry(errors.New("p broke"))
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("p", queue.NewRawTask("p", nil, queue.In("fa")))
	wf.Add("c", queue.NewRawTask("c", nil, queue.In("fb")), queue.Edge{Parent: "p", OnDead: policy})
	wf.Add("g", queue.NewRawTask("g", nil, queue.In("fa")), queue.After("c"))
	wf.Add("s", queue.NewRawTask("s", nil, queue.In("fa")), queue.Edge{Parent: "p", OnDead: queue.EdgeRun})
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	want := map[queue.EdgePolicy]string{
		queue.EdgeFail: "p=dead c=failed g=failed s=succeeded",
		queue.EdgeRun:  "p=dead c=succeeded g=succeeded s=succeeded",
		queue.EdgeSkip: "p=dead c=skipped g=failed s=succeeded",
	}[policy]
	if got := nodeStates(wi); got != want {
		t.Fatalf("%s: nodes %s, want %s", policy, got, want)
	}
	runs := map[string]int{"p": 1, "s": 1}
	if policy == queue.EdgeRun {
		runs["c"], runs["g"] = 1, 1
	}
	for _, typ := range []string{"p", "c", "g", "s"} {
		if n := log.count(typ); n != runs[typ] {
			t.Fatalf("%s: %s ran %d times, want %d (runs %v)", policy, typ, n, runs[typ], log.order())
		}
	}
	if !strings.Contains(wi.Why, "node p is dead") || !strings.Contains(wi.Why, "p broke") || !strings.Contains(wi.Node("p").Error, "p broke") {
		t.Fatalf("why %q, p's error %q", wi.Why, wi.Node("p").Error)
	}
}

// testWorkflowFanOut: node split adds three parts from its handler, each a
// child of split, and a join after the parts; join runs once, after every
// part, and the workflow succeeds only then.
func testWorkflowFanOut(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type != "split" {
			return nil
		}
		more := queue.NewWorkflow()
		var joins []queue.Edge
		for k := range 3 {
			name := fmt.Sprintf("part-%d", k)
			more.Add(name, queue.NewRawTask("part", nil, queue.In("fa")), queue.After("split"))
			joins = append(joins, queue.After(name))
		}
		more.Add("join", queue.NewRawTask("join", nil, queue.In("fb")), joins...)
		return task.ExtendWorkflow(ctx, more)
	}))
	wf := queue.NewWorkflow()
	wf.Add("split", queue.NewRawTask("split", nil, queue.In("fa")))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateSucceeded)
	if len(wi.Nodes) != 5 || wi.Counts[queue.StateSucceeded] != 5 || log.count("part") != 3 || log.count("join") != 1 {
		t.Fatalf("nodes %s, runs %v", nodeStates(wi), log.order())
	}
	if o := log.order(); o[len(o)-1] != "join" {
		t.Fatalf("join ran before a part: %v", o)
	}
	// a finished workflow takes no more nodes
	more := queue.NewWorkflow()
	more.Add("late", queue.NewRawTask("late", nil, queue.In("fa")))
	if err := r.client.ExtendWorkflow(ctx, id, more); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("extending a finished workflow: %v, want ErrWorkflowFinished", err)
	}
}

// testWorkflowCancel: a running node is asked to stop, a pending one is
// deleted, the waiting ones are cancelled and never run; a failed node
// stays failed, and once its dead parent is retried it is cancelled, not
// run. The workflow ends cancelled, and says so.
func testWorkflowCancel(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var fail sync.Map
	fail.Store("broken", true)
	started := make(chan struct{}, 1)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if _, ok := fail.Load(task.Type); ok {
			return SkipRetry(errors.New("broken"))
		}
		if task.Type == "long" {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("long", queue.NewRawTask("long", nil, queue.In("fa")))
	wf.Add("later", queue.NewRawTask("later", nil, queue.In("fb"), queue.ProcessIn(time.Hour)))
	wf.Add("after", queue.NewRawTask("after", nil, queue.In("fa")), queue.After("long"))
	wf.Add("end", queue.NewRawTask("end", nil, queue.In("fa")), queue.After("after"), queue.After("later"))
	wf.Add("broken", queue.NewRawTask("broken", nil, queue.In("fb")))
	wf.Add("below", queue.NewRawTask("below", nil, queue.In("fb")), queue.After("broken"))
	// pending in a queue no worker serves: the cancel deletes it
	wf.Add("parked", queue.NewRawTask("parked", nil, queue.In("idle")))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	<-started
	waitFor(t, 30*time.Second, "below to fail", func() bool {
		wi, err := r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.Node("below").State == queue.StateFailed
	})
	must(t, r.insp.CancelWorkflow(ctx, id))
	wi := waitWorkflow(t, r, id, queue.StateCancelled)
	waitFor(t, 30*time.Second, "the cancelled workflow to finish", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && !wi.FinishedAt.IsZero()
	})
	if got := nodeStates(wi); got != "long=dead later=dead after=cancelled end=cancelled broken=dead below=failed parked=dead" || wi.Why != "cancelled" {
		t.Fatalf("nodes %s, why %q", got, wi.Why)
	}
	// the dead parent retried: its child is freed, and cancelled
	fail.Delete("broken")
	must(t, r.insp.RunTask(ctx, "fb", wi.Node("broken").TaskID))
	waitFor(t, 30*time.Second, "broken to succeed", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.Node("broken").State == queue.StateSucceeded && wi.Node("below").State == queue.StateCancelled
	})
	if wi.State != queue.StateCancelled || wi.FinishedAt.IsZero() {
		t.Fatalf("after the retry: %s, finished %v", wi.State, wi.FinishedAt)
	}
	if log.count("after")+log.count("end")+log.count("later")+log.count("below")+log.count("parked") != 0 {
		t.Fatalf("cancelled nodes ran: %v", log.order())
	}
	if err := r.insp.CancelWorkflow(ctx, id); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("cancelling again: %v, want ErrWorkflowFinished", err)
	}
	more := queue.NewWorkflow()
	more.Add("x", queue.NewRawTask("x", nil, queue.In("fa")))
	if err := r.client.ExtendWorkflow(ctx, id, more); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("extending a cancelled workflow: %v, want ErrWorkflowCancelled", err)
	}
}

// testWorkflowDeadNodeResumes: b dies, so d (after b and c) fails and the
// workflow fails; retrying b's task through the Inspector resumes the
// graph: b succeeds, d runs once, and the workflow succeeds.
func testWorkflowDeadNodeResumes(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var fail sync.Map
	fail.Store("b", true)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if _, ok := fail.Load(task.Type); ok {
			return SkipRetry(errors.New("b broke"))
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("a", queue.NewRawTask("a", nil, queue.In("fa")))
	wf.Add("b", queue.NewRawTask("b", nil, queue.In("fb")), queue.After("a"))
	wf.Add("c", queue.NewRawTask("c", nil, queue.In("fa")), queue.After("a"))
	wf.Add("d", queue.NewRawTask("d", nil, queue.In("fa")), queue.After("b"), queue.After("c"))
	wf.Add("e", queue.NewRawTask("e", nil, queue.In("fa")), queue.After("d"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	if got := nodeStates(wi); got != "a=succeeded b=dead c=succeeded d=failed e=failed" {
		t.Fatalf("after the death: %s", got)
	}
	ti, err := r.insp.GetTask(ctx, "fb", wi.Node("b").TaskID)
	must(t, err)
	if ti.State != queue.StateDead || ti.WorkflowID != id || ti.Node != "b" {
		t.Fatalf("b's task: state %s, workflow %q, node %q", ti.State, ti.WorkflowID, ti.Node)
	}
	fail.Delete("b")
	must(t, r.insp.RunTask(ctx, "fb", wi.Node("b").TaskID))
	wi = waitWorkflow(t, r, id, queue.StateSucceeded)
	if wi.Counts[queue.StateSucceeded] != 5 || wi.Why != "" {
		t.Fatalf("after the retry: %s, why %q", nodeStates(wi), wi.Why)
	}
	for typ, n := range map[string]int{"a": 1, "b": 2, "c": 1, "d": 1, "e": 1} {
		if log.count(typ) != n {
			t.Fatalf("%s ran %d times, want %d: %v", typ, log.count(typ), n, log.order())
		}
	}
}

// testWorkflowDeadLeafRetried: a dead leaf, whose only child ran over an
// EdgeRun edge, fails the workflow; retried to success it reopens no node,
// and the workflow turns succeeded.
func testWorkflowDeadLeafRetried(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var fail sync.Map
	fail.Store("leaf", true)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		if _, ok := fail.Load(task.Type); ok {
			return SkipRetry(errors.New("leaf broke"))
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("a", queue.NewRawTask("a", nil, queue.In("fa")))
	wf.Add("leaf", queue.NewRawTask("leaf", nil, queue.In("fb")), queue.After("a"))
	wf.Add("tidy", queue.NewRawTask("tidy", nil, queue.In("fa")), queue.Edge{Parent: "leaf", OnDead: queue.EdgeRun})
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	fail.Delete("leaf")
	must(t, r.insp.RunTask(ctx, "fb", wi.Node("leaf").TaskID))
	wi = waitWorkflow(t, r, id, queue.StateSucceeded)
	if wi.Why != "" || wi.Counts[queue.StateSucceeded] != 3 {
		t.Fatalf("after the retry: %s, why %q", nodeStates(wi), wi.Why)
	}
}

// testWorkflowFanOutRepeated: a fan-out handler that fails after it
// extended the workflow runs again and extends it again: the repeat
// succeeds and adds nothing, and each part runs once. An extension that
// reuses only some names is refused.
func testWorkflowFanOutRepeated(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type != "split" {
			return nil
		}
		more := queue.NewWorkflow()
		more.Add("part-1", queue.NewRawTask("part", nil, queue.In("fa")), queue.After("split"))
		more.Add("part-2", queue.NewRawTask("part", nil, queue.In("fa")), queue.After("split"))
		if err := task.ExtendWorkflow(ctx, more); err != nil {
			return err
		}
		if task.Attempt == 1 {
			return errors.New("lost after extending")
		}
		mixed := queue.NewWorkflow()
		mixed.Add("part-2", queue.NewRawTask("part", nil, queue.In("fa")), queue.After("split"))
		mixed.Add("part-3", queue.NewRawTask("part", nil, queue.In("fa")), queue.After("split"))
		if err := task.ExtendWorkflow(ctx, mixed); !errors.Is(err, queue.ErrInvalid) {
			return fmt.Errorf("a partial repeat: %v, want ErrInvalidWorkflow", err)
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("split", queue.NewRawTask("split", nil, queue.In("fa"), queue.MaxRetry(3)))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateSucceeded)
	if len(wi.Nodes) != 3 || log.count("split") != 2 || log.count("part") != 2 {
		t.Fatalf("nodes %s, runs %v", nodeStates(wi), log.order())
	}
}

// testWorkflowSealedResults: under a key ring, with errors encrypted, a
// parent's large result reaches its child through ParentResult as the
// parent wrote it, and a dead node's error reads back through
// GetWorkflow; Redis holds neither in clear.
func testWorkflowSealedResults(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t), KeyRing: ringOf("k1"), EncryptErrors: true}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	r := &flowRig{rdb: rdb, qcfg: qcfg, client: client, insp: insp}
	ctx := context.Background()
	want := strings.Repeat("a secret result of the parent; ", 40)
	got := make(chan string, 1)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		switch task.Type {
		case "parent":
			return task.SetResult(ctx, []byte(want))
		case "child":
			v, err := task.ParentResult(ctx, "parent")
			if err != nil {
				return err
			}
			got <- string(v)
			return nil
		}
		return SkipRetry(errors.New("a secret failure"))
	}))
	wf := queue.NewWorkflow()
	wf.Add("parent", queue.NewRawTask("parent", nil, queue.In("fa")))
	wf.Add("child", queue.NewRawTask("child", nil, queue.In("fb")), queue.After("parent"))
	wf.Add("broken", queue.NewRawTask("broken", nil, queue.In("fa")))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	if v := <-got; v != want {
		t.Fatalf("ParentResult: %d bytes, want the %d the parent wrote", len(v), len(want))
	}
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	if e := wi.Node("broken").Error; !strings.Contains(e, "a secret failure") || !strings.Contains(wi.Why, "node broken is dead: worker: skip retry: a secret failure") {
		t.Fatalf("broken's error reads %q, why %q", e, wi.Why)
	}
	for _, secret := range []string{"a secret result", "a secret failure"} {
		if held := redistest.KeysHolding(t, rdb, "*", []byte(secret)); len(held) > 0 {
			t.Fatalf("%q in clear in %v", secret, held)
		}
	}
}

// testWorkflowFanOutIntoJoin: the graph is recorded with its join after
// split; split's handler adds parts, each before the join. The join waits
// for every part and runs once, after them; a part that dies over an
// EdgeRun edge does not stop it.
func testWorkflowFanOutIntoJoin(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		switch task.Type {
		case "split":
			more := queue.NewWorkflow()
			for k := range 4 {
				more.Add(fmt.Sprintf("part-%d", k), queue.NewRawTask("part", []byte{byte(k)}, queue.In("fa")),
					queue.After("split"), queue.Edge{Child: "join", OnDead: queue.EdgeRun})
			}
			return task.ExtendWorkflow(ctx, more)
		case "part":
			if task.Payload[0] == 3 {
				return SkipRetry(errors.New("part 3 broke"))
			}
		}
		return nil
	}))
	wf := queue.NewWorkflow()
	wf.Add("split", queue.NewRawTask("split", nil, queue.In("fa")))
	wf.Add("join", queue.NewRawTask("join", nil, queue.In("fb")), queue.After("split"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	o := log.order()
	if log.count("part") != 4 || log.count("join") != 1 || o[len(o)-1] != "join" {
		t.Fatalf("runs %v", o)
	}
	join := wi.Node("join")
	if join.State != queue.StateSucceeded || len(join.Parents) != 5 || join.Parents[1] != (queue.Edge{Parent: "part-0", OnDead: queue.EdgeRun}) {
		t.Fatalf("join: %+v", join)
	}
}
