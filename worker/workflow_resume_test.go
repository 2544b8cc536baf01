package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// A retried dead node resumes the graph below it (docs/workflows.md,
// "Retrying a dead node resumes the graph"): these tests kill a node,
// retry it through the Inspector, and count every node's runs.

// resumeServer starts a worker for the resume tests: a short lease, so a
// node whose ack keeps failing would be run again within the test.
func resumeServer(t *testing.T, r *flowRig, h Handler) *Server {
	t.Helper()
	cfg := Config{Config: r.qcfg, Queues: map[string]int{"fa": 1, "fb": 1}, Concurrency: 16,
		Lease: 3 * time.Second, WorkflowSweep: 100 * time.Millisecond}
	cfg.Logger = testLogger(t)
	return startServer(t, r.rdb, cfg, h)
}

// breakable is a handler that counts runs per task type and fails, with
// SkipRetry, the types marked broken.
type breakable struct {
	log    runLog
	broken sync.Map
}

func (b *breakable) ProcessTask(_ context.Context, task *Task) error {
	b.log.add(task.Type)
	if _, ok := b.broken.Load(task.Type); ok {
		return SkipRetry(errors.New(task.Type + " broke"))
	}
	return nil
}

// waitRuns waits until workflow id is in state want, failing at once when
// a task type ran more often than most allows.
func waitRuns(t *testing.T, r *flowRig, id string, want queue.State, log *runLog, most map[string]int) *queue.WorkflowInfo {
	t.Helper()
	var wi *queue.WorkflowInfo
	deadline := time.Now().Add(30 * time.Second)
	for {
		for typ, n := range most {
			if c := log.count(typ); c > n {
				t.Fatalf("workflow %s: %s ran %d times, at most %d expected (runs %v)", id, typ, c, n, log.order())
			}
		}
		var err error
		wi, err = r.insp.GetWorkflow(context.Background(), id)
		if err == nil && wi.State == want {
			return wi
		}
		if time.Now().After(deadline) {
			state := "unknown"
			if wi != nil {
				state = string(wi.State) + ": " + nodeStates(wi)
			}
			t.Fatalf("timed out waiting for workflow %s to be %s; it is %s (err %v, runs %v)", id, want, state, err, log.order())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkRuns fails unless each task type of want ran exactly as often.
func checkRuns(t *testing.T, log *runLog, want map[string]int) {
	t.Helper()
	for typ, n := range want {
		if c := log.count(typ); c != n {
			t.Fatalf("%s ran %d times, want %d (runs %v)", typ, c, n, log.order())
		}
	}
}

// checkSummary fails unless the workflow's stored counters (what
// WorkflowSummary and the dashboard read) agree with its nodes' states.
func checkSummary(t *testing.T, r *flowRig, wi *queue.WorkflowInfo) {
	t.Helper()
	sum, err := r.insp.WorkflowSummary(context.Background(), wi.ID)
	must(t, err)
	counted := map[queue.State]int{}
	for _, n := range wi.Nodes {
		counted[n.State]++
	}
	for st, n := range sum.Counts {
		if counted[st] != n {
			t.Fatalf("workflow %s: the summary counts %d nodes %s, the nodes say %d (%s)", wi.ID, n, st, counted[st], nodeStates(wi))
		}
	}
}

// TestWorkflowResumeBelowSkip is issue 42's minimal case: bad -> skip
// (EdgeSkip) -> {belowskip (After), belowskiprun (EdgeRun)}. bad dies,
// skip is skipped, belowskip fails and belowskiprun runs. Once bad is
// retried and succeeds, skip runs, and its success must not release
// belowskiprun again (its task was released and ran already): skip's ack
// failed in the script every time, skip ran again at each lease expiry,
// and the workflow stayed running.
func TestWorkflowResumeBelowSkip(t *testing.T) {
	t.Parallel()
	testResumeBelowSkip(t, singleFlowRig(t))
}

func testResumeBelowSkip(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var h breakable
	h.broken.Store("bad", true)
	resumeServer(t, r, &h)
	wf := queue.NewWorkflow()
	wf.Add("bad", queue.NewRawTask("bad", nil, queue.In("fa")))
	wf.Add("skip", queue.NewRawTask("skip", nil, queue.In("fb")), queue.Edge{Parent: "bad", OnDead: queue.EdgeSkip})
	wf.Add("belowskip", queue.NewRawTask("belowskip", nil, queue.In("fa")), queue.After("skip"))
	wf.Add("belowskiprun", queue.NewRawTask("belowskiprun", nil, queue.In("fb")), queue.Edge{Parent: "skip", OnDead: queue.EdgeRun})
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	most := map[string]int{"bad": 2, "skip": 1, "belowskip": 1, "belowskiprun": 1}
	wi := waitRuns(t, r, id, queue.StateFailed, &h.log, most)
	if got, want := nodeStates(wi), "bad=dead skip=skipped belowskip=failed belowskiprun=succeeded"; got != want {
		t.Fatalf("after the death: %s, want %s", got, want)
	}
	checkSummary(t, r, wi)
	h.broken.Delete("bad")
	must(t, r.insp.RunTask(ctx, "fa", wi.Node("bad").TaskID))
	wi = waitRuns(t, r, id, queue.StateSucceeded, &h.log, most)
	if wi.Counts[queue.StateSucceeded] != 4 || wi.Why != "" {
		t.Fatalf("after the retry: %s, why %q", nodeStates(wi), wi.Why)
	}
	checkSummary(t, r, wi)
	checkRuns(t, &h.log, most)
}

// edgeOf returns the edge from parent with policy p; "after" is
// queue.After.
func edgeOf(parent, p string) queue.Edge {
	if p == "after" {
		return queue.After(parent)
	}
	return queue.Edge{Parent: parent, OnDead: queue.EdgePolicy(p)}
}

// resumePolicies are the edge policies the resume table pairs up.
var resumePolicies = []string{string(queue.EdgeRun), string(queue.EdgeSkip), string(queue.EdgeFail), "after"}

// resumeCase is one pair of edge policies of the resume table: p -(e1)->
// c -(e2)-> g.
type resumeCase struct {
	e1, e2 string
	id     string
}

func (c *resumeCase) name() string { return c.e1 + "-" + c.e2 }

// typ is node x's task type in this case, so runs are counted per case.
func (c *resumeCase) typ(x string) string { return x + ":" + c.name() }

// before is what the nodes are once p died: c follows its edge on p, and
// g its edge on c (c ran and succeeded under EdgeRun).
func (c *resumeCase) before() (states string, runs map[string]int) {
	cState, gState := map[string]string{"run": "succeeded", "skip": "skipped", "fail": "failed", "after": "failed"}[c.e1], "succeeded"
	if cState != "succeeded" {
		gState = map[string]string{"run": "succeeded", "skip": "skipped", "fail": "failed", "after": "failed"}[c.e2]
	}
	runs = map[string]int{c.typ("p"): 1, c.typ("c"): 0, c.typ("g"): 0}
	if cState == "succeeded" {
		runs[c.typ("c")] = 1
	}
	if gState == "succeeded" {
		runs[c.typ("g")] = 1
	}
	return "p=dead c=" + cState + " g=" + gState, runs
}

// TestWorkflowResumeEdgePairs: every pair of edge policies on a parent p
// and a grandchild g (p -(e1)-> c -(e2)-> g). p dies; each node then is as
// its edge says. p is retried and succeeds: every node that failed or was
// skipped because of it runs, once; a node that ran already (under
// EdgeRun) does not run again; the workflow succeeds.
func TestWorkflowResumeEdgePairs(t *testing.T) {
	t.Parallel()
	testResumeEdgePairs(t, singleFlowRig(t))
}

func testResumeEdgePairs(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var h breakable
	var cases []*resumeCase
	for _, e1 := range resumePolicies {
		for _, e2 := range resumePolicies {
			c := &resumeCase{e1: e1, e2: e2}
			h.broken.Store(c.typ("p"), true)
			cases = append(cases, c)
		}
	}
	resumeServer(t, r, &h)
	// at most: p dies once and succeeds once, c and g run once each
	most := map[string]int{}
	for _, c := range cases {
		wf := queue.NewWorkflow()
		wf.Add("p", queue.NewRawTask(c.typ("p"), nil, queue.In("fa")))
		wf.Add("c", queue.NewRawTask(c.typ("c"), nil, queue.In("fb")), edgeOf("p", c.e1))
		wf.Add("g", queue.NewRawTask(c.typ("g"), nil, queue.In("fa")), edgeOf("c", c.e2))
		id, err := r.client.EnqueueWorkflow(ctx, wf)
		must(t, err)
		c.id = id
		most[c.typ("p")], most[c.typ("c")], most[c.typ("g")] = 2, 1, 1
	}
	for _, c := range cases {
		wi := waitRuns(t, r, c.id, queue.StateFailed, &h.log, most)
		want, runs := c.before()
		if got := nodeStates(wi); got != want {
			t.Fatalf("%s: after the death: %s, want %s", c.name(), got, want)
		}
		if !strings.Contains(wi.Why, "node p is dead") {
			t.Fatalf("%s: why %q", c.name(), wi.Why)
		}
		checkSummary(t, r, wi)
		checkRuns(t, &h.log, runs)
	}
	for _, c := range cases {
		h.broken.Delete(c.typ("p"))
		wi, err := r.insp.GetWorkflow(ctx, c.id)
		must(t, err)
		must(t, r.insp.RunTask(ctx, "fa", wi.Node("p").TaskID))
	}
	for _, c := range cases {
		wi := waitRuns(t, r, c.id, queue.StateSucceeded, &h.log, most)
		if got, want := nodeStates(wi), "p=succeeded c=succeeded g=succeeded"; got != want || wi.Why != "" {
			t.Fatalf("%s: after the retry: %s, want %s; why %q", c.name(), got, want, wi.Why)
		}
		checkSummary(t, r, wi)
	}
	// every acked node's run is counted before its ack: wait for nothing
	// more, and check no node ran twice
	for _, c := range cases {
		checkRuns(t, &h.log, map[string]int{c.typ("p"): 2, c.typ("c"): 1, c.typ("g"): 1})
	}
}

// TestWorkflowResumeOnCluster: the resume tests on a three-master
// cluster, where outcomes reach the workflow's home as notifications and
// released nodes through its outbox.
func TestWorkflowResumeOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	t.Run("BelowSkip", func(t *testing.T) { testResumeBelowSkip(t, newFlowRig(t, rdb)) })
	t.Run("EdgePairs", func(t *testing.T) { testResumeEdgePairs(t, newFlowRig(t, rdb)) })
	t.Run("ChildStates", func(t *testing.T) { testResumeChildStates(t, newFlowRig(t, rdb)) })
	t.Run("Cancelled", func(t *testing.T) { testResumeCancelled(t, newFlowRig(t, rdb)) })
}

// TestWorkflowResumeChildStates: the children of a skipped node mid are
// in every state when the retried node above it succeeds and mid runs:
// one under EdgeRun still running, one that ran and died, one that ran
// and succeeded, one failed (After) and one skipped (EdgeSkip). mid's
// success releases the failed and the skipped ones, once, and leaves the
// others as they are; the workflow fails for the dead one alone.
func TestWorkflowResumeChildStates(t *testing.T) {
	t.Parallel()
	testResumeChildStates(t, singleFlowRig(t))
}

func testResumeChildStates(t *testing.T, r *flowRig) {
	ctx := context.Background()
	wf := queue.NewWorkflow()
	wf.Add("bad", queue.NewRawTask("bad", nil, queue.In("fa")))
	wf.Add("mid", queue.NewRawTask("mid", nil, queue.In("fb")), queue.Edge{Parent: "bad", OnDead: queue.EdgeSkip})
	for _, k := range []string{"running", "dead", "ok"} {
		wf.Add(k, queue.NewRawTask(k, nil, queue.In("fa")), queue.Edge{Parent: "mid", OnDead: queue.EdgeRun})
	}
	wf.Add("failed", queue.NewRawTask("failed", nil, queue.In("fb")), queue.After("mid"))
	wf.Add("skipped", queue.NewRawTask("skipped", nil, queue.In("fb")), queue.Edge{Parent: "mid", OnDead: queue.EdgeSkip})
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	var h breakable
	h.broken.Store("bad", true)
	h.broken.Store("dead", true)
	// running runs until mid succeeded: mid's success meets it running
	resumeServer(t, r, HandlerFunc(func(ctx context.Context, task *Task) error {
		if task.Type != "running" {
			return h.ProcessTask(ctx, task)
		}
		h.log.add(task.Type)
		for {
			wi, err := r.insp.GetWorkflow(ctx, id)
			if err == nil && wi.Node("mid").State == queue.StateSucceeded {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	most := map[string]int{"bad": 2, "mid": 1, "running": 1, "dead": 1, "ok": 1, "failed": 1, "skipped": 1}
	var wi *queue.WorkflowInfo
	waitFor(t, 30*time.Second, "the children of mid to settle", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && h.log.count("running") == 1 &&
			nodeStates(wi) == "bad=dead mid=skipped running=enqueued dead=dead ok=succeeded failed=failed skipped=skipped"
	})
	checkSummary(t, r, wi)
	h.broken.Delete("bad")
	must(t, r.insp.RunTask(ctx, "fa", wi.Node("bad").TaskID))
	wi = waitRuns(t, r, id, queue.StateFailed, &h.log, most)
	if got, want := nodeStates(wi), "bad=succeeded mid=succeeded running=succeeded dead=dead ok=succeeded failed=succeeded skipped=succeeded"; got != want {
		t.Fatalf("after the retry: %s, want %s", got, want)
	}
	if !strings.Contains(wi.Why, "node dead is dead") {
		t.Fatalf("why %q", wi.Why)
	}
	checkSummary(t, r, wi)
	checkRuns(t, &h.log, most)
}

// TestWorkflowResumeCancelled: a node retried in a cancelled workflow
// succeeds, and resumes nothing: the skipped node below it is cancelled,
// not run, and the node under EdgeRun that ran does not run again.
func TestWorkflowResumeCancelled(t *testing.T) {
	t.Parallel()
	testResumeCancelled(t, singleFlowRig(t))
}

func testResumeCancelled(t *testing.T, r *flowRig) {
	ctx := context.Background()
	wf := queue.NewWorkflow()
	wf.Add("slow", queue.NewRawTask("slow", nil, queue.In("fb")))
	wf.Add("bad", queue.NewRawTask("bad", nil, queue.In("fa")))
	wf.Add("mid", queue.NewRawTask("mid", nil, queue.In("fb")), queue.Edge{Parent: "bad", OnDead: queue.EdgeSkip})
	wf.Add("ran", queue.NewRawTask("ran", nil, queue.In("fa")), queue.Edge{Parent: "mid", OnDead: queue.EdgeRun})
	wf.Add("failed", queue.NewRawTask("failed", nil, queue.In("fa")), queue.After("mid"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	var h breakable
	h.broken.Store("bad", true)
	// slow runs until the cancel stops it: the workflow is running then
	resumeServer(t, r, HandlerFunc(func(ctx context.Context, task *Task) error {
		if task.Type != "slow" {
			return h.ProcessTask(ctx, task)
		}
		h.log.add(task.Type)
		<-ctx.Done()
		return ctx.Err()
	}))
	most := map[string]int{"slow": 1, "bad": 2, "mid": 0, "ran": 1, "failed": 0}
	var wi *queue.WorkflowInfo
	waitFor(t, 30*time.Second, "bad dead, ran succeeded, slow running", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && h.log.count("slow") == 1 &&
			nodeStates(wi) == "slow=enqueued bad=dead mid=skipped ran=succeeded failed=failed"
	})
	must(t, r.insp.CancelWorkflow(ctx, id))
	waitFor(t, 30*time.Second, "slow dead of the cancel", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.Node("slow").State == queue.StateDead
	})
	h.broken.Delete("bad")
	must(t, r.insp.RunTask(ctx, "fa", wi.Node("bad").TaskID))
	waitFor(t, 30*time.Second, "bad succeeded", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.Node("bad").State == queue.StateSucceeded && !wi.FinishedAt.IsZero()
	})
	if got, want := nodeStates(wi), "slow=dead bad=succeeded mid=cancelled ran=succeeded failed=failed"; got != want || wi.State != queue.StateCancelled {
		t.Fatalf("after the retry: %s %s, want cancelled %s", wi.State, got, want)
	}
	checkSummary(t, r, wi)
	checkRuns(t, &h.log, most)
}
