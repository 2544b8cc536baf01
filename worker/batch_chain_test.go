package worker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// flowRig is a Redis (single or cluster) with a client, an inspector and
// queues of several partitions, for the chain and batch tests.
type flowRig struct {
	rdb    redis.UniversalClient
	qcfg   queue.Config
	client *queue.Client
	insp   *queue.Inspector
}

func newFlowRig(t *testing.T, rdb redis.UniversalClient) *flowRig {
	t.Helper()
	qcfg := queue.Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"fa": 4, "fb": 2}}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	return &flowRig{rdb: rdb, qcfg: qcfg, client: client, insp: insp}
}

func singleFlowRig(t *testing.T) *flowRig {
	srv := redistest.Start(t)
	return newFlowRig(t, srv.Client(t))
}

// server starts a worker on the rig's queues, stopped at the test's end.
func (r *flowRig) server(t *testing.T, h Handler) *Server {
	t.Helper()
	cfg := Config{Config: r.qcfg, Queues: map[string]int{"fa": 1, "fb": 1, "cb": 1}, Concurrency: 8,
		ForwardInterval: 50 * time.Millisecond, WorkflowSweep: 100 * time.Millisecond}
	cfg.Logger = testLogger(t)
	return startServer(t, r.rdb, cfg, h)
}

// runLog records handler runs by task type, in order.
type runLog struct {
	mu   sync.Mutex
	runs []string
	by   map[string]int
}

func (l *runLog) add(typ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]int{}
	}
	l.runs = append(l.runs, typ)
	l.by[typ]++
}

func (l *runLog) count(typ string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[typ]
}

func (l *runLog) order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs...)
}

func TestChain(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) { t.Parallel(); testChainRuns(t, singleFlowRig(t)) })
	t.Run("DeadLinkResumes", func(t *testing.T) { t.Parallel(); testChainDeadLinkResumes(t, singleFlowRig(t)) })
}

func TestBatch(t *testing.T) {
	t.Parallel()
	t.Run("Callbacks", func(t *testing.T) { t.Parallel(); testBatchCallbacks(t, singleFlowRig(t)) })
	t.Run("Nested", func(t *testing.T) { t.Parallel(); testBatchNested(t, singleFlowRig(t)) })
	t.Run("AddFromInside", func(t *testing.T) { t.Parallel(); testBatchAddFromInside(t, singleFlowRig(t)) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); testFlowBadInput(t, singleFlowRig(t)) })
	t.Run("DeadMemberRetried", func(t *testing.T) { t.Parallel(); testBatchDeadMemberRetried(t, singleFlowRig(t)) })
}

// batchRead is a batch read as the workflow it is (Inspector.GetWorkflow):
// its members are every node but its gate and its callbacks.
type batchRead struct {
	wi                              *queue.WorkflowInfo
	Total, Pending, Succeeded, Dead int
	// Closed: the gate succeeded; Finished: closed, no member pending.
	Closed, Finished      bool
	OnSuccess, OnComplete string // the callbacks' task IDs
	Description, Parent   string
}

// getBatch reads batch id with GetWorkflow, and checks that its nodes
// and its counts agree.
func getBatch(ctx context.Context, insp *queue.Inspector, id string) (*batchRead, error) {
	wi, err := insp.GetWorkflow(ctx, id)
	if err != nil {
		return nil, err
	}
	b := &batchRead{wi: wi, Description: wi.Description, Parent: wi.Parent}
	counts := map[queue.State]int{}
	for _, n := range wi.Nodes {
		counts[n.State]++
		switch n.Name {
		case home.Gate:
			b.Closed = n.State == queue.StateSucceeded
		case home.OnSuccess:
			b.OnSuccess = n.TaskID
		case home.OnComplete:
			b.OnComplete = n.TaskID
		default:
			b.Total++
			switch n.State {
			case queue.StateSucceeded:
				b.Succeeded++
			case queue.StateDead:
				b.Dead++
			default:
				b.Pending++
			}
		}
	}
	b.Finished = b.Closed && b.Pending == 0
	// a batch still running moves while its nodes are read page by page:
	// the counts agree with the nodes once it is still
	for st, n := range counts {
		if wi.State != queue.StateActive && wi.Counts[st] != n {
			return nil, fmt.Errorf("batch %s: %d nodes %s, Counts says %d (%v)", id, n, st, wi.Counts[st], wi.Counts)
		}
	}
	if wi.Total != len(wi.Nodes) || wi.Node(home.Gate) == nil {
		return nil, fmt.Errorf("batch %s: Total %d, %d nodes, gate %v", id, wi.Total, len(wi.Nodes), wi.Node(home.Gate))
	}
	return b, nil
}

// state returns the state of b's node name ("" when it has none).
func (b *batchRead) state(name string) queue.State {
	if n := b.wi.Node(name); n != nil {
		return n.State
	}
	return ""
}

// testBatchDeadMemberRetried: a member dies; the batch completes (the
// complete callback runs, the success one does not) and its parent is told
// it failed; the dead member retried through the Inspector succeeds, and
// then the success callback runs, and the parent's after it.
func testBatchDeadMemberRetried(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var fail sync.Map
	fail.Store("flaky", true)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if _, ok := fail.Load(task.Type); ok {
			return SkipRetry(errors.New("flaky failed"))
		}
		return nil
	}))
	parent, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("parent-ok", nil, queue.In("cb")),
		OnComplete: queue.NewRawTask("parent-complete", nil, queue.In("cb"))})
	must(t, err)
	child, err := r.client.NewBatch(ctx, queue.BatchOptions{Parent: parent, OnSuccess: queue.NewRawTask("ok", nil, queue.In("cb")),
		OnComplete: queue.NewRawTask("complete", nil, queue.In("cb"))})
	must(t, err)
	infos, err := r.client.AddToBatch(ctx, child, queue.NewRawTask("fine", nil, queue.In("fa")), queue.NewRawTask("flaky", nil, queue.In("fb")))
	must(t, err)
	must(t, r.client.CloseBatch(ctx, child))
	must(t, r.client.CloseBatch(ctx, parent))
	waitFor(t, 30*time.Second, "both complete callbacks", func() bool {
		return log.count("complete") == 1 && log.count("parent-complete") == 1
	})
	bi, err := getBatch(ctx, r.insp, child)
	must(t, err)
	pi, err := getBatch(ctx, r.insp, parent)
	must(t, err)
	// OnSuccess failed over its EdgeFail edge from the dead member: it
	// did not go out
	if bi.Dead != 1 || bi.Succeeded != 1 || !bi.Finished || bi.state(home.OnSuccess) != queue.StateFailed ||
		bi.wi.State != queue.StateFailed || pi.Dead != 1 || log.count("ok")+log.count("parent-ok") != 0 {
		t.Fatalf("after the death: child %+v, parent %+v, runs %v", bi, pi, log.order())
	}
	fail.Delete("flaky")
	must(t, r.insp.RunTask(ctx, "fb", infos[1].ID))
	waitFor(t, 30*time.Second, "both success callbacks", func() bool {
		return log.count("ok") == 1 && log.count("parent-ok") == 1
	})
	o := strings.Join(log.order(), ",")
	if strings.Index(o, ",ok") > strings.Index(o, "parent-ok") || log.count("complete") != 1 || log.count("parent-complete") != 1 {
		t.Fatalf("runs %s", o)
	}
	bi, err = getBatch(ctx, r.insp, child)
	must(t, err)
	pi, err = getBatch(ctx, r.insp, parent)
	must(t, err)
	if bi.Dead != 0 || bi.Succeeded != 2 || pi.Dead != 0 || pi.Succeeded != 1 {
		t.Fatalf("after the retry: child %+v, parent %+v", bi, pi)
	}
}

// TestFlowsOnCluster: the chain and batch tests on a three-master
// cluster, queues of several partitions spread over the masters.
func TestFlowsOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	t.Run("Chain", func(t *testing.T) { testChainRuns(t, newFlowRig(t, rdb)) })
	t.Run("ChainDeadLinkResumes", func(t *testing.T) { testChainDeadLinkResumes(t, newFlowRig(t, rdb)) })
	t.Run("BatchCallbacks", func(t *testing.T) { testBatchCallbacks(t, newFlowRig(t, rdb)) })
	t.Run("BatchNested", func(t *testing.T) { testBatchNested(t, newFlowRig(t, rdb)) })
	t.Run("BatchAddFromInside", func(t *testing.T) { testBatchAddFromInside(t, newFlowRig(t, rdb)) })
}

// testChainRuns: a 3-link chain across two queues runs in order, each link
// reading the previous link's result.
func testChainRuns(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var mu sync.Mutex
	got := map[string]string{}
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		prev, err := task.PreviousResult(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		got[task.Type] = string(prev)
		mu.Unlock()
		log.add(task.Type)
		return task.SetResult(ctx, []byte("from "+task.Type))
	}))
	id, err := r.client.EnqueueWorkflow(ctx, queue.Chain(
		queue.NewRawTask("one", nil, queue.In("fa")),
		queue.NewRawTask("two", nil, queue.In("fb")),
		queue.NewRawTask("three", nil, queue.In("fa"))))
	must(t, err)
	waitFor(t, 30*time.Second, "the chain to finish", func() bool {
		wi, err := r.insp.WorkflowSummary(ctx, id)
		return err == nil && wi.State == queue.StateSucceeded
	})
	if o := strings.Join(log.order(), ","); o != "one,two,three" {
		t.Fatalf("links ran as %s, want one,two,three", o)
	}
	mu.Lock()
	if got["one"] != "" || got["two"] != "from one" || got["three"] != "from two" {
		t.Fatalf("previous results: %q", got)
	}
	mu.Unlock()
	wi, err := r.insp.GetWorkflow(ctx, id)
	must(t, err)
	if len(wi.Nodes) != 3 {
		t.Fatalf("chain of 3 links has nodes %+v", wi.Nodes)
	}
	for k, l := range wi.Nodes {
		if l.State != queue.StateSucceeded || l.Name != strconv.Itoa(k+1) || l.TaskID == "" {
			t.Fatalf("link %d: %+v", k+1, l)
		}
		if k > 0 && (len(l.Parents) != 1 || l.Parents[0].Parent != strconv.Itoa(k)) {
			t.Fatalf("link %d's parents: %+v", k+1, l.Parents)
		}
	}
	if wi.Nodes[1].Queue != "fb" || wi.Nodes[2].Type != "three" || wi.FinishedAt.IsZero() {
		t.Fatalf("chain info: %+v", wi)
	}
}

// testChainDeadLinkResumes: the middle link dies, the chain's workflow
// fails there (GetWorkflow says where and why) and the link after it
// fails; retrying the link through the Inspector resumes the chain to its
// end.
func testChainDeadLinkResumes(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var fail sync.Map
	fail.Store("two", true)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if _, ok := fail.Load(task.Type); ok {
			return SkipRetry(errors.New("boom in two"))
		}
		return nil
	}))
	// the dying link has headers: fail.lua finds its flow ref past them
	id, err := r.client.EnqueueWorkflow(ctx, queue.Chain(
		queue.NewRawTask("one", nil, queue.In("fa")),
		queue.NewRawTask("two", nil, queue.In("fb"), queue.Headers(map[string]string{"tenant": "acme"}), queue.Headers(map[string]string{"trace": "x"})),
		queue.NewRawTask("three", nil, queue.In("fa"))))
	must(t, err)
	var wi *queue.WorkflowInfo
	waitFor(t, 30*time.Second, "the chain to stop", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.State == queue.StateFailed
	})
	if !strings.Contains(wi.Why, "boom in two") || !strings.Contains(wi.Why, "node 2 ") ||
		wi.Node("2").State != queue.StateDead || wi.Node("3").State != queue.StateFailed {
		t.Fatalf("stopped chain: %+v", wi)
	}
	home := keys.Home(r.qcfg.Prefix, keys.HomeOf(id))
	if ttl := r.rdb.PTTL(ctx, home.Workflow(id)).Val(); ttl <= 0 || ttl > r.qcfg.WorkflowRetention && r.qcfg.WorkflowRetention > 0 {
		t.Fatalf("a stopped chain's TTL is %v, want its retention", ttl)
	}
	dead := wi.Node("2").TaskID
	ti, err := r.insp.GetTask(ctx, "fb", dead)
	must(t, err)
	if ti.State != queue.StateDead || ti.WorkflowID != id || ti.Node != "2" {
		t.Fatalf("dead link's task info: state %s, workflow %q, node %q", ti.State, ti.WorkflowID, ti.Node)
	}
	time.Sleep(200 * time.Millisecond)
	if n := log.count("three"); n != 0 {
		t.Fatalf("link three ran %d times while the chain was stopped", n)
	}
	fail.Delete("two")
	must(t, r.insp.RunTask(ctx, "fb", dead))
	waitFor(t, 30*time.Second, "the chain to resume and finish", func() bool {
		wi, err = r.insp.GetWorkflow(ctx, id)
		return err == nil && wi.State == queue.StateSucceeded
	})
	if wi.Why != "" || log.count("three") != 1 || log.count("two") != 2 {
		t.Fatalf("resumed chain: %+v, runs %v", wi, log.order())
	}
}

// testBatchCallbacks: a batch over 4 partitions with a success and a
// complete callback; each callback runs once, after every member.
func testBatchCallbacks(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	var members sync.Map
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "member" {
			members.Store(task.ID, true)
			if id, node := task.Workflow(); id == "" || !strings.HasPrefix(node, ".") {
				return SkipRetry(fmt.Errorf("member in workflow %q as node %q, want a batch's member", id, node))
			}
		}
		return nil
	}))
	b, err := r.client.NewBatch(ctx, queue.BatchOptions{
		OnSuccess:   queue.NewRawTask("on-success", nil, queue.In("cb")),
		OnComplete:  queue.NewRawTask("on-complete", nil, queue.In("cb")),
		Description: "forty members",
	})
	must(t, err)
	var tasks []*queue.Task
	for i := range 40 {
		tasks = append(tasks, queue.NewRawTask("member", []byte(fmt.Sprint(i)), queue.In("fa")))
	}
	infos, err := r.client.AddToBatch(ctx, b, tasks[:20]...)
	must(t, err)
	more, err := r.client.AddToBatch(ctx, b, tasks[20:]...)
	must(t, err)
	parts := map[int]bool{}
	for _, in := range append(infos, more...) {
		parts[in.Partition] = true
	}
	if len(parts) != 4 {
		t.Fatalf("members in partitions %v, want all 4", parts)
	}
	waitFor(t, 30*time.Second, "the members to run", func() bool { return log.count("member") == 40 })
	time.Sleep(300 * time.Millisecond) // not closed: no callback may run
	if log.count("on-success")+log.count("on-complete") != 0 {
		t.Fatalf("a callback ran before Close: %v", log.order())
	}
	must(t, r.client.CloseBatch(ctx, b))
	waitFor(t, 30*time.Second, "both callbacks", func() bool {
		return log.count("on-success") == 1 && log.count("on-complete") == 1
	})
	time.Sleep(300 * time.Millisecond)
	if log.count("on-success") != 1 || log.count("on-complete") != 1 {
		t.Fatalf("callbacks ran %d and %d times", log.count("on-success"), log.count("on-complete"))
	}
	var bi *batchRead
	waitFor(t, 10*time.Second, "the callbacks' outcomes", func() bool {
		bi, err = getBatch(ctx, r.insp, b)
		return err == nil && bi.state(home.OnSuccess) == queue.StateSucceeded && bi.state(home.OnComplete) == queue.StateSucceeded
	})
	// both callbacks went out and succeeded, so the workflow did
	if bi.Total != 40 || bi.Succeeded != 40 || bi.Pending != 0 || bi.Dead != 0 || !bi.Closed || !bi.Finished ||
		bi.wi.State != queue.StateSucceeded || bi.wi.FinishedAt.IsZero() || bi.Description != "forty members" || bi.Parent != "" {
		t.Fatalf("batch info: %+v", bi)
	}
	if _, err := r.client.AddToBatch(ctx, b, queue.NewRawTask("member", nil, queue.In("fa"))); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("Add to a finished batch: %v, want ErrBatchFinished", err)
	}
	recent, err := inspect.RecentFlows(ctx, r.insp, 10)
	must(t, err)
	if len(recent) == 0 || recent[0].ID != b || recent[0].Kind != "batch" {
		t.Fatalf("recent flows: %+v", recent)
	}
}

// testBatchNested: a child batch counts as one member of its parent; the
// parent's callback runs after the child's.
func testBatchNested(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "child-member" {
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}))
	parent, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("parent-done", nil, queue.In("cb"))})
	must(t, err)
	_, err = r.client.AddToBatch(ctx, parent, queue.NewRawTask("parent-member", nil, queue.In("fa")))
	must(t, err)
	child, err := r.client.NewBatch(ctx, queue.BatchOptions{Parent: parent,
		OnSuccess: queue.NewRawTask("child-done", nil, queue.In("cb"))})
	must(t, err)
	_, err = r.client.AddToBatch(ctx, child, queue.NewRawTask("child-member", nil, queue.In("fb")), queue.NewRawTask("child-member", nil, queue.In("fa")))
	must(t, err)
	must(t, r.client.CloseBatch(ctx, parent))
	bi, err := getBatch(ctx, r.insp, parent)
	must(t, err)
	if bi.Total != 2 {
		t.Fatalf("parent total %d, want 2 (one task, one child batch)", bi.Total)
	}
	time.Sleep(300 * time.Millisecond)
	if log.count("parent-done") != 0 {
		t.Fatal("the parent finished while its child batch was open")
	}
	must(t, r.client.CloseBatch(ctx, child))
	waitFor(t, 30*time.Second, "the parent's callback", func() bool { return log.count("parent-done") == 1 })
	o := strings.Join(log.order(), ",")
	if strings.Index(o, "child-done") > strings.Index(o, "parent-done") || log.count("child-done") != 1 {
		t.Fatalf("runs %s: the child's callback must come first, once", o)
	}
	ci, err := getBatch(ctx, r.insp, child)
	must(t, err)
	if ci.Parent != parent || ci.Succeeded != 2 {
		t.Fatalf("child info: %+v", ci)
	}
	bi, err = getBatch(ctx, r.insp, parent)
	must(t, err)
	if bi.Succeeded != 2 || !bi.Finished {
		t.Fatalf("parent info: %+v", bi)
	}
}

// testBatchAddFromInside: tasks added to an open batch, and from inside
// one of its own running tasks after Close; the callback waits for them.
func testBatchAddFromInside(t *testing.T, r *flowRig) {
	ctx := context.Background()
	var log runLog
	closed := make(chan struct{})
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		if task.Type == "spawner" {
			<-closed
			b, _ := task.Workflow()
			if b == "" {
				return SkipRetry(errors.New("no batch"))
			}
			var kids []*queue.Task
			for range 5 {
				kids = append(kids, queue.NewRawTask("kid", nil, queue.In("fb")))
			}
			if _, err := r.client.AddToBatch(ctx, b, kids...); err != nil {
				return err
			}
			// and a nested batch of its own, the batch closed already
			child, err := r.client.NewBatch(ctx, queue.BatchOptions{Parent: b})
			if err != nil {
				return err
			}
			if _, err := r.client.AddToBatch(ctx, child, queue.NewRawTask("kid", nil, queue.In("fa"))); err != nil {
				return err
			}
			if err := r.client.CloseBatch(ctx, child); err != nil {
				return err
			}
		}
		if task.Type == "kid" {
			time.Sleep(10 * time.Millisecond)
		}
		log.add(task.Type)
		return nil
	}))
	b, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("done", nil, queue.In("cb"))})
	must(t, err)
	_, err = r.client.AddToBatch(ctx, b, queue.NewRawTask("spawner", nil, queue.In("fa")), queue.NewRawTask("plain", nil, queue.In("fa")))
	must(t, err)
	must(t, r.client.CloseBatch(ctx, b))
	if _, err := r.client.AddToBatch(ctx, b, queue.NewRawTask("late", nil, queue.In("fa"))); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("Add from outside after Close: %v, want ErrBatchClosed", err)
	}
	close(closed)
	waitFor(t, 30*time.Second, "the callback", func() bool { return log.count("done") == 1 })
	if log.count("kid") != 6 {
		t.Fatalf("the callback ran after %d of 6 kids: %v", log.count("kid"), log.order())
	}
	bi, err := getBatch(ctx, r.insp, b)
	must(t, err)
	if bi.Total != 8 || bi.Succeeded != 8 {
		t.Fatalf("batch info: %+v", bi)
	}
}

// testFlowBadInput: unknown IDs, empty chains, invalid links and
// callbacks are clear errors that write nothing.
func testFlowBadInput(t *testing.T, r *flowRig) {
	ctx := context.Background()
	if _, err := r.insp.GetWorkflow(ctx, "0190a0a0-0000-7000-8000-000000000000"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("GetWorkflow of an unknown batch ID: %v", err)
	}
	if _, err := r.insp.GetWorkflow(ctx, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("GetWorkflow of an unknown ID: %v", err)
	}
	if _, err := r.client.AddToBatch(ctx, "0190a0a0-0000-7000-8000-000000000000", queue.NewRawTask("x", nil)); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Add to an unknown batch: %v", err)
	}
	if err := r.client.CloseBatch(ctx, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Close of an unknown batch: %v", err)
	}
	if _, err := r.client.NewBatch(ctx, queue.BatchOptions{Parent: "0190a0a0-0000-7000-8000-000000000000"}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("NewBatch under an unknown parent: %v", err)
	}
	if _, err := r.client.EnqueueWorkflow(ctx, queue.Chain()); !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), "empty chain") {
		t.Fatalf("empty chain: %v", err)
	}
	_, err := r.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("ok", nil), queue.NewRawTask("bad", nil, queue.MaxRetry(-1))))
	if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `"2"`) {
		t.Fatalf("chain with an invalid link: %v", err)
	}
	_, err = r.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("ok", nil, queue.TaskID("mine"))))
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("chain link with a TaskID: %v", err)
	}
	_, err = r.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("ok", nil), queue.NewRawTask("once", nil, queue.Unique(time.Hour))))
	if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), `"2"`) {
		t.Fatalf("chain link with Unique: %v", err)
	}
	_, err = r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("", nil)})
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("callback without a type: %v", err)
	}
	b, err := r.client.NewBatch(ctx, queue.BatchOptions{})
	must(t, err)
	if _, err := r.client.AddToBatch(ctx, b, queue.NewRawTask("ok", nil), nil); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("Add of a nil task: %v", err)
	}
	bi, err := getBatch(ctx, r.insp, b)
	must(t, err)
	if bi.Total != 0 {
		t.Fatalf("a rejected Add registered %d members", bi.Total)
	}
	// nothing was written for the rejected chains: no queue holds a task
	n, err := r.rdb.Exists(ctx, "{"+r.qcfg.Prefix+":default:0}:feed").Result()
	must(t, err)
	if n != 0 {
		t.Fatal("a rejected chain enqueued a task")
	}
}

// TestFlowDuplicateNotifications: notifications delivered again (the same
// entries forwarded twice, by the sweep and by hand; a stale "dead" after
// success) and acks resent change nothing: no count moves, no callback or
// link is enqueued again.
func TestFlowDuplicateNotifications(t *testing.T) {
	t.Parallel()
	r := singleFlowRig(t)
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		return task.SetResult(ctx, []byte("r"))
	}))
	b, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("cb", nil, queue.In("cb")),
		OnComplete: queue.NewRawTask("cb-complete", nil, queue.In("cb"))})
	must(t, err)
	infos, err := r.client.AddToBatch(ctx, b, queue.NewRawTask("m", nil, queue.In("fa")), queue.NewRawTask("m", nil, queue.In("fa")))
	must(t, err)
	must(t, r.client.CloseBatch(ctx, b))
	ch, err := r.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("l1", nil, queue.In("fa")), queue.NewRawTask("l2", nil, queue.In("fb"))))
	must(t, err)
	var chain *queue.WorkflowInfo
	waitFor(t, 30*time.Second, "callbacks and the chain", func() bool {
		chain, err = r.insp.GetWorkflow(ctx, ch)
		return log.count("cb") == 1 && log.count("cb-complete") == 1 && err == nil && chain.State == queue.StateSucceeded
	})
	var before *batchRead
	// the callbacks' outcomes, and the batch finished by them: on a busy
	// machine its state and FinishedAt could follow the outcomes' reads
	waitFor(t, 10*time.Second, "the callbacks' outcomes at the batch, and the batch finished", func() bool {
		before, err = getBatch(ctx, r.insp, b)
		return err == nil && before.state(home.OnSuccess) == queue.StateSucceeded && before.state(home.OnComplete) == queue.StateSucceeded &&
			before.wi.State == queue.StateSucceeded && !before.wi.FinishedAt.IsZero()
	})

	// the notifications again, several times each, with a stale "dead"
	env := &home.Env{RDB: r.rdb, Prefix: r.qcfg.Prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	bh, chh := keys.HomeOf(b), keys.HomeOf(ch)
	// a batch is a workflow: its members' refs name their nodes
	bw, err := r.insp.GetWorkflow(ctx, b)
	must(t, err)
	refOf := func(taskID string) string {
		for _, n := range bw.Nodes {
			if n.TaskID == taskID {
				return wire.FlowRef{Kind: 'w', Home: bh, ID: keys.ShortID(b), Node: n.Name}.String()
			}
		}
		t.Fatalf("member %s is no node of its batch", taskID)
		return ""
	}
	var notes []any
	for _, in := range infos {
		ref := refOf(in.ID)
		for _, outcome := range []string{"s", "s", "d"} {
			n, err := msgpack.Marshal([]any{ref, wire.StoredID(in.ID), outcome, "", "late"})
			must(t, err)
			notes = append(notes, n)
		}
	}
	l1, err := msgpack.Marshal([]any{wire.FlowRef{Kind: 'w', Home: chh, ID: keys.ShortID(ch), Node: "1"}.String(), wire.StoredID(chain.Node("1").TaskID), "s", "r", ""})
	must(t, err)
	notes = append(notes, l1, l1)
	list := keys.For(r.qcfg.Prefix, "fa", 0).Notify()
	for range 2 {
		must(t, r.rdb.RPush(ctx, list, notes...).Err())
		_, _, err := env.Forward(ctx, []string{list})
		must(t, err)
	}
	// and a resent ack of a finished member: refused, no notification
	k := keys.For(r.qcfg.Prefix, "fa", infos[0].Partition)
	codes, err := script.Ack.Run(ctx, r.rdb, []string{k.Active(), k.Msg(), k.State(), k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire()},
		k.T, "", 1000, 1000, 5, wire.StoredID(infos[0].ID), 1, 0, "", refOf(infos[0].ID)).Int64Slice()
	must(t, err)
	if codes[0] != 0 || r.rdb.LLen(ctx, k.Notify()).Val() != 0 {
		t.Fatalf("resent ack: codes %v, notify list %d long", codes, r.rdb.LLen(ctx, k.Notify()).Val())
	}
	time.Sleep(500 * time.Millisecond) // a sweep or two
	after, err := getBatch(ctx, r.insp, b)
	must(t, err)
	// every node, its state and its edges, and the counts
	if !reflect.DeepEqual(after.wi, before.wi) {
		t.Fatalf("batch changed by duplicates:\nbefore %+v\nafter  %+v", *before.wi, *after.wi)
	}
	if log.count("cb") != 1 || log.count("cb-complete") != 1 || log.count("l2") != 1 {
		t.Fatalf("runs after duplicates: %v", log.order())
	}
	for h := range keys.FlowPartitions {
		if n := r.rdb.ZCard(ctx, keys.Home(r.qcfg.Prefix, h).Out()).Val(); n != 0 {
			t.Fatalf("home %d outbox holds %d entries", h, n)
		}
	}
	if n := r.rdb.LLen(ctx, list).Val(); n != 0 {
		t.Fatalf("notification list holds %d entries", n)
	}
}

// TestBatchDeletedMembers: members deleted by an operator (a pending one
// by ID, the retrying ones all at once, a backlog purged) count as dead to their batch, which
// finishes: the complete callback runs, the success callback does not.
func TestBatchDeletedMembers(t *testing.T) {
	t.Parallel()
	r := singleFlowRig(t)
	ctx := context.Background()
	var log runLog
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "flaky" {
			return RetryIn(time.Hour, errors.New("later"))
		}
		return nil
	}))
	b, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("cb-success", nil, queue.In("cb")),
		OnComplete: queue.NewRawTask("cb-complete", nil, queue.In("cb"))})
	must(t, err)
	// "idle" and "idle2" have no worker: their members stay pending until deleted
	infos, err := r.client.AddToBatch(ctx, b, queue.NewRawTask("ok", nil, queue.In("fa")), queue.NewRawTask("flaky", nil, queue.In("fb")),
		queue.NewRawTask("waits", nil, queue.In("idle")), queue.NewRawTask("waits", nil, queue.In("idle2")))
	must(t, err)
	must(t, r.client.CloseBatch(ctx, b))
	waitFor(t, 30*time.Second, "the flaky member to retry", func() bool {
		ti, err := r.insp.GetTask(ctx, "fb", infos[1].ID)
		return err == nil && ti.State == queue.StateRetry
	})
	must(t, r.insp.DeleteTask(ctx, "idle", infos[2].ID))
	n, err := r.insp.DeleteAllTasks(ctx, "fb", queue.StateRetry)
	must(t, err)
	if n != 1 {
		t.Fatalf("deleted %d retrying tasks, want 1", n)
	}
	if n, err = r.insp.DeleteAllTasks(ctx, "idle2", queue.StatePending); err != nil || n != 1 {
		t.Fatalf("purged %d pending tasks (%v), want 1", n, err)
	}
	waitFor(t, 30*time.Second, "the complete callback", func() bool { return log.count("cb-complete") == 1 })
	bi, err := getBatch(ctx, r.insp, b)
	must(t, err)
	if bi.Succeeded != 1 || bi.Dead != 3 || !bi.Finished || log.count("cb-success") != 0 {
		t.Fatalf("batch after deletions: %+v, runs %v", bi, log.order())
	}
}

// TestChainCompressedResult: a link's result large enough to be stored
// compressed reaches the next link as the link wrote it.
func TestChainCompressedResult(t *testing.T) {
	t.Parallel()
	r := singleFlowRig(t)
	ctx := context.Background()
	want := strings.Repeat("a result long enough to be compressed; ", 64)
	got := make(chan string, 1)
	r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
		if task.Type == "one" {
			return task.SetResult(ctx, []byte(want))
		}
		prev, err := task.PreviousResult(ctx)
		if err != nil {
			return err
		}
		got <- string(prev)
		return nil
	}))
	_, err := r.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("one", nil, queue.In("fa")), queue.NewRawTask("two", nil, queue.In("fb"))))
	must(t, err)
	if prev := <-got; prev != want {
		t.Fatalf("PreviousResult: %d bytes starting %q, want the %d bytes link one wrote", len(prev), prev[:min(20, len(prev))], len(want))
	}
}
