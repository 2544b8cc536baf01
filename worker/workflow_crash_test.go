package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestBatchKilledWorkers: a 10,000-task batch over 4 partitions (on one
// server, and on a 3-master cluster with them spread over every master), run by
// worker processes that are SIGKILLed while producers add and while the
// members run. Every member is counted once, each callback is enqueued
// exactly once and runs at least once: more than once only where a killed
// worker had started it. Nothing is left in the outboxes.
func TestBatchKilledWorkers(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testBatchKilledWorkers(t, fourPartitionRig(t, nil))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testBatchKilledWorkers(t, fourPartitionRig(t, redistest.StartCluster(t, 3)))
	})
}

// fourPartitionRig is a process test's Redis with a queue of 4
// partitions: a server of its own, or cluster cl with the 4 partitions
// spread over every master.
func fourPartitionRig(t *testing.T, cl *redistest.Cluster) *rig {
	t.Helper()
	if cl == nil {
		r := singleRig(t, "flowkill")
		r.qcfg.Partitions = map[string]int{r.queue: 4}
		r.base.Partitions = 4
		var err error
		r.client, err = queue.NewClient(r.rdb, r.qcfg)
		must(t, err)
		r.insp, err = queue.NewInspector(r.rdb, r.qcfg)
		must(t, err)
		return r
	}
	r := clusterRig(t, cl)
	q, _ := spreadQueue(t, cl, r.qcfg.Prefix, 4)
	r.queue, r.base.Queue, r.base.Partitions = q, q, 4
	r.qcfg.Partitions = map[string]int{q: 4}
	var err error
	r.client, err = queue.NewClient(r.rdb, r.qcfg)
	must(t, err)
	r.insp, err = queue.NewInspector(r.rdb, r.qcfg)
	must(t, err)
	return r
}

// testBatchKilledWorkers is TestBatchKilledWorkers on r.
func testBatchKilledWorkers(t *testing.T, r *rig) {
	const total, step = 10_000, 1000
	qname := r.queue
	ctx := context.Background()
	qcfg, client, insp := r.qcfg, r.client, r.insp
	k := recKeysFor(qcfg.Prefix)
	base := r.base
	base.Handler, base.Concurrency, base.Lease, base.Heartbeat = handleFlow, 8, 2*time.Second, 400*time.Millisecond

	// Workers die three ways: SIGKILLed by the test while members are
	// added and run; by themselves right after writing a flow task's ack,
	// before forwarding it (one worker, at its 20th write); by themselves after
	// forwarding notifications that made the callbacks due, before
	// delivering them (every other worker, at the first time: whoever
	// forwards the last members' outcomes). A worker that died before
	// delivering is replaced by one without a crash point; the sweeps of
	// the others finish its work.
	f := newFleet(t, r, base, "w")
	kill := func() {
		i := 0
		if f.live[0].opts.Crash == crashAfterFlowOutcome {
			i = 1 // it is to die by itself
		}
		f.kill(i)
	}
	f.spawn(crashBeforeFlowDeliver, 1)
	f.spawn(crashBeforeFlowDeliver, 1)
	f.spawn(crashAfterFlowOutcome, 20)

	batch, err := client.NewBatch(ctx, queue.BatchOptions{
		OnSuccess:  queue.NewRawTask("cb-success", nil, queue.In(qname)),
		OnComplete: queue.NewRawTask("cb-complete", nil, queue.In(qname)),
	})
	must(t, err)
	for i := 0; i < total; i += step {
		tasks := make([]*queue.Task, step)
		for j := range tasks {
			typ := "member"
			if i+j == total-1 {
				// it waits for the gate below: the workers' forward,
				// not Close, makes the callbacks due
				typ = "member-last"
			}
			tasks[j] = queue.NewRawTask(typ, []byte(strconv.Itoa(i+j)), queue.In(qname))
		}
		_, err := client.AddToBatch(ctx, batch, tasks...)
		must(t, err)
		if i/step%4 == 1 {
			kill() // while members are added and run
		}
		f.reap(true)
	}
	must(t, client.CloseBatch(ctx, batch))
	must(t, r.rdb.Set(ctx, k.gate("closed"), "1", 0).Err())

	// more kills while the members run, then wait for the callbacks
	deadline := time.Now().Add(90 * time.Second)
	var bi *batchRead
	for kills := 0; ; {
		f.reap(true)
		bi, err = getBatch(ctx, insp, batch)
		must(t, err)
		if bi.Finished && completions(t, r.rdb, k, bi.OnSuccess) > 0 && completions(t, r.rdb, k, bi.OnComplete) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not finished with both callbacks run after 90s: %+v", bi)
		}
		if kills < 2 && !bi.Finished {
			kill()
			kills++
		}
		time.Sleep(300 * time.Millisecond)
	}
	f.reap(true)
	t.Logf("batch of %d finished; %d workers died: %d killed by the test, %d after a flow ack, %d before delivering callbacks",
		total, len(f.died), len(f.died)-f.crashed[crashAfterFlowOutcome]-f.crashed[crashBeforeFlowDeliver],
		f.crashed[crashAfterFlowOutcome], f.crashed[crashBeforeFlowDeliver])
	if f.crashed[crashAfterFlowOutcome] == 0 {
		t.Error("no worker died between writing a flow ack and forwarding it")
	}
	// a batch is a workflow: on one server, the ack that frees a
	// callback enqueues it, so only a cluster's callbacks wait for a
	// delivery a worker can die before
	if r.srv == nil && f.crashed[crashBeforeFlowDeliver] == 0 {
		t.Error("no worker died between forwarding the last outcomes and delivering the callbacks")
	}
	if bi.Total != total || bi.Succeeded != total || bi.Dead != 0 || bi.Pending != 0 {
		t.Fatalf("batch counts: %+v", bi)
	}
	for _, cb := range []string{bi.OnSuccess, bi.OnComplete} {
		starts, err := r.rdb.HGet(ctx, k.starts(), cb).Int()
		must(t, err)
		if starts == 1 {
			continue
		}
		startedByKilled := f.byDead(k.started, cb)
		if starts > 1+startedByKilled {
			t.Fatalf("callback %s started %d times; killed workers had started it %d times", cb, starts, startedByKilled)
		}
	}
	// the outboxes and notification lists empty out
	waitFor(t, 20*time.Second, "flow outboxes and notification lists to empty", func() bool {
		n := int64(0)
		for h := range keys.FlowPartitions {
			n += r.rdb.ZCard(ctx, keys.Home(qcfg.Prefix, h).Out()).Val()
		}
		for p := range 4 {
			n += r.rdb.LLen(ctx, keys.For(qcfg.Prefix, qname, p).Notify()).Val()
		}
		return n == 0
	})
}

// completions is how many times task id completed, as the children record.
func completions(t *testing.T, rdb redis.UniversalClient, k recKeys, id string) int {
	t.Helper()
	n, _ := rdb.HGet(context.Background(), k.completions(), id).Int()
	return n
}

// fleet is a crash test's worker processes, started from base: the live
// ones, the dead ones, and how many died by each crash point.
type fleet struct {
	t       *testing.T
	r       *rig
	base    childOpts
	name    string // the children's names' prefix
	seq     int
	live    []*child
	died    []*child
	crashed map[string]int
}

func newFleet(t *testing.T, r *rig, base childOpts, name string) *fleet {
	return &fleet{t: t, r: r, base: base, name: name, crashed: map[string]int{}}
}

// spawn starts a child that dies by itself the at-th time it passes crash
// ("" for none), and waits until it serves.
func (f *fleet) spawn(crash string, at int) {
	o := f.base
	o.Crash, o.CrashAt = crash, at
	f.seq++
	c := startChild(f.t, fmt.Sprintf("%s%d", f.name, f.seq), o)
	c.waitReady(f.t, f.r.rdb)
	f.live = append(f.live, c)
}

// reap moves the children that exited by themselves to died, counting
// their crash points, and starts one in place of each: in place of one
// that died after a flow ack, with deliverAfterAck, one that dies before
// it delivers (whoever sees released work due first); else a plain one.
func (f *fleet) reap(deliverAfterAck bool) {
	for i := 0; i < len(f.live); i++ {
		if c := f.live[i]; c.exited() {
			f.live = append(f.live[:i], f.live[i+1:]...)
			i--
			f.died = append(f.died, c)
			f.crashed[c.opts.Crash]++
			if deliverAfterAck && c.opts.Crash == crashAfterFlowOutcome {
				f.spawn(crashBeforeFlowDeliver, 1)
			} else {
				f.spawn("", 0)
			}
		}
	}
}

// settle moves the live children that exited since the last reap to
// died, as reap does but starting none in their place, and returns how
// many died.
func (f *fleet) settle() int {
	for i := 0; i < len(f.live); i++ {
		if c := f.live[i]; c.exited() {
			f.live = append(f.live[:i], f.live[i+1:]...)
			i--
			f.died = append(f.died, c)
			f.crashed[c.opts.Crash]++
		}
	}
	return len(f.died)
}

// kill SIGKILLs live child i and starts in its place one that dies
// before it delivers (whoever sees released work due first).
func (f *fleet) kill(i int) {
	c := f.live[i]
	f.live = append(f.live[:i:i], f.live[i+1:]...)
	// a child may die at its own crash point between the parent's look
	// and the signal: then it crashed, as reap would have counted it
	err := c.cmd.Process.Signal(syscall.SIGKILL)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		f.t.Fatalf("child %s: send SIGKILL: %v", c.name, err)
	}
	if !c.waitExit(10 * time.Second) {
		f.t.Fatalf("child %s survived SIGKILL", c.name)
	}
	if err != nil {
		f.crashed[c.opts.Crash]++
	}
	f.died = append(f.died, c)
	f.spawn(crashBeforeFlowDeliver, 1)
}

// byDead returns how many dead children recorded task id in the set
// key(pid) names: started or completed it before they died.
func (f *fleet) byDead(key func(pid int) string, id string) int {
	n := 0
	for _, c := range f.died {
		if ok, _ := f.r.rdb.SIsMember(context.Background(), key(c.pid), id).Result(); ok {
			n++
		}
	}
	return n
}

// TestChainKilledWorkers: a 30-link chain (queue.Chain, a workflow) over
// 4 partitions, on one server and on a 3-master cluster, while worker
// processes die right after writing a link's ack, and right after
// forwarding a link's success before delivering the next link (on the
// cluster, where releases go through the outbox). The chain finishes; each
// link is enqueued once: it ran more than once only where a killed worker
// had started it.
func TestChainKilledWorkers(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testChainKilledWorkers(t, fourPartitionRig(t, nil))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testChainKilledWorkers(t, fourPartitionRig(t, redistest.StartCluster(t, 3)))
	})
}

func testChainKilledWorkers(t *testing.T, r *rig) {
	const links = 30
	ctx := context.Background()
	k := recKeysFor(r.qcfg.Prefix)
	base := r.base
	base.Handler, base.Concurrency, base.Lease, base.Heartbeat = handleFlow, 4, 2*time.Second, 400*time.Millisecond
	f := newFleet(t, r, base, "c")
	f.spawn(crashBeforeFlowDeliver, 3)
	f.spawn(crashBeforeFlowDeliver, 5)
	f.spawn(crashAfterFlowOutcome, 4)

	tasks := make([]*queue.Task, links)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("cb-link", []byte(strconv.Itoa(i)), queue.In(r.queue))
	}
	id, err := r.client.EnqueueWorkflow(ctx, queue.Chain(tasks...))
	must(t, err)
	deadline := time.Now().Add(90 * time.Second)
	var wi *queue.WorkflowInfo
	for {
		f.reap(false)
		wi, err = r.insp.GetWorkflow(ctx, id)
		must(t, err)
		if wi.State == queue.StateSucceeded {
			break
		}
		if wi.State != queue.StateActive || time.Now().After(deadline) {
			t.Fatalf("chain %s after 90s: %d of %d links succeeded; why %q", wi.State, wi.Counts[queue.StateSucceeded], links, wi.Why)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// on one server, an ack enqueues the link it releases: only a
	// cluster's releases wait for a delivery, where two more die. A
	// worker may die at its crash point after the fleet's last look, as
	// the others finish the chain: wait for its exit too.
	want := map[bool]int{true: 1, false: 3}[r.srv != nil]
	waitFor(t, 10*time.Second, "the workers to die at their crash points", func() bool { return f.settle() >= want })

	for _, n := range wi.Nodes {
		starts, _ := r.rdb.HGet(ctx, k.starts(), n.TaskID).Int()
		byDead := f.byDead(k.started, n.TaskID)
		if starts < 1 || starts > 1+byDead {
			t.Fatalf("link %s started %d times; dead workers had started it %d times", n.Name, starts, byDead)
		}
		if completions(t, r.rdb, k, n.TaskID) < 1 {
			t.Fatalf("link %s never completed", n.Name)
		}
	}
	t.Logf("chain of %d links done; %d workers died", links, len(f.died))
}

// TestWorkflowKilledWorkers: a 2,001-node graph over 4 partitions (on one
// server, and on a 3-master cluster): ten layers of 199 nodes fanned out
// from the layer above's join and joined again, run by worker
// processes that are SIGKILLed as it runs and that die by themselves
// right after a node's ack and right after forwarding outcomes that
// released nodes. The workflow succeeds; each node's task is enqueued
// once: an external counter sees it start more than once, and complete
// more than once, only where a killed worker had started or completed it.
func TestWorkflowKilledWorkers(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testWorkflowKilledWorkers(t, fourPartitionRig(t, nil))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testWorkflowKilledWorkers(t, fourPartitionRig(t, redistest.StartCluster(t, 3)))
	})
}

func testWorkflowKilledWorkers(t *testing.T, r *rig) {
	const layers, width = 10, 200
	qname := r.queue
	ctx := context.Background()
	k := recKeysFor(r.qcfg.Prefix)
	base := r.base
	base.Handler, base.Concurrency, base.Lease, base.Heartbeat = handleFlow, 8, 2*time.Second, 400*time.Millisecond
	f := newFleet(t, r, base, "g")
	f.spawn(crashBeforeFlowDeliver, 1)
	f.spawn(crashAfterFlowOutcome, 20)
	f.spawn("", 0)
	f.spawn("", 0)

	wf := queue.NewWorkflow()
	node := func(name string, parents ...queue.Edge) {
		wf.Add(name, queue.NewRawTask("cb-node", []byte(name), queue.In(qname)), parents...)
	}
	node("root")
	parent := "root"
	for l := range layers {
		var joins []queue.Edge
		for j := range width - 1 {
			name := fmt.Sprintf("l%d-%d", l, j)
			node(name, queue.After(parent))
			joins = append(joins, queue.After(name))
		}
		parent = fmt.Sprintf("join%d", l)
		node(parent, joins...)
	}
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)

	deadline := time.Now().Add(120 * time.Second)
	var wi *queue.WorkflowInfo
	for kills := 0; ; {
		f.reap(true)
		wi, err = r.insp.GetWorkflow(ctx, id)
		must(t, err)
		if wi.State == queue.StateSucceeded {
			break
		}
		if wi.State != queue.StateActive || time.Now().After(deadline) {
			t.Fatalf("workflow %s after %d kills: %d succeeded, %d enqueued, %d waiting; why %q",
				wi.State, kills, wi.Counts[queue.StateSucceeded], wi.Counts[queue.StateEnqueued], wi.Counts[queue.StateWaiting], wi.Why)
		}
		// kill one worker each time another layer has finished
		// kill a worker without a crash point each time a sixth more of
		// the nodes succeeded
		if done := wi.Counts[queue.StateSucceeded]; kills < 4 && done > (kills+1)*len(wi.Nodes)/6 {
			i := len(f.live) - 1
			for i > 0 && f.live[i].opts.Crash != "" {
				i--
			}
			f.kill(i)
			kills++
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.reap(true)
	t.Logf("workflow of %d nodes succeeded; %d workers died: %d after a flow ack, %d before delivering",
		len(wi.Nodes), len(f.died), f.crashed[crashAfterFlowOutcome], f.crashed[crashBeforeFlowDeliver])
	if len(wi.Nodes) != 1+layers*width || wi.Counts[queue.StateSucceeded] != len(wi.Nodes) {
		t.Fatalf("nodes: %d, %d succeeded", len(wi.Nodes), wi.Counts[queue.StateSucceeded])
	}
	// on one server, an ack enqueues the nodes it releases: only a
	// cluster's releases wait for a delivery
	if f.crashed[crashAfterFlowOutcome] == 0 || (r.srv == nil && f.crashed[crashBeforeFlowDeliver] == 0) {
		t.Errorf("crash points hit: %v", f.crashed)
	}
	starts := r.rdb.HGetAll(ctx, k.starts()).Val()
	completed := r.rdb.HGetAll(ctx, k.completions()).Val()
	byDead := f.byDead
	for _, n := range wi.Nodes {
		s, _ := strconv.Atoi(starts[n.TaskID])
		c, _ := strconv.Atoi(completed[n.TaskID])
		if s < 1 || (s > 1 && s > 1+byDead(k.started, n.TaskID)) {
			t.Fatalf("node %s started %d times; killed workers had started it %d times", n.Name, s, byDead(k.started, n.TaskID))
		}
		if c < 1 || (c > 1 && c > 1+byDead(k.done, n.TaskID)) {
			t.Fatalf("node %s completed %d times; killed workers had completed it %d times", n.Name, c, byDead(k.done, n.TaskID))
		}
	}
	if len(starts) != len(wi.Nodes) {
		t.Fatalf("%d tasks started, want one per node: %d", len(starts), len(wi.Nodes))
	}
}
