package worker

import (
	"context"
	"fmt"
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
	var live, killed []*child
	seq := 0
	spawn := func(crash string, at int) {
		o := base
		o.Crash, o.CrashAt = crash, at
		seq++
		c := startChild(t, fmt.Sprintf("w%d", seq), o)
		c.waitReady(t, r.rdb)
		live = append(live, c)
	}
	selfCrashed := map[string]int{}
	reap := func() { // replace the workers that died by themselves
		for i := 0; i < len(live); i++ {
			if c := live[i]; c.exited() {
				live = append(live[:i], live[i+1:]...)
				i--
				killed = append(killed, c)
				selfCrashed[c.opts.Crash]++
				if c.opts.Crash == crashAfterFlowOutcome {
					spawn(crashBeforeFlowDeliver, 1) // so whoever sees the callbacks due first dies
				} else {
					spawn("", 0)
				}
			}
		}
	}
	kill := func() {
		i := 0
		if live[0].opts.Crash == crashAfterFlowOutcome {
			i = 1 // it is to die by itself
		}
		c := live[i]
		live = append(live[:i:i], live[i+1:]...)
		c.signal(t, syscall.SIGKILL)
		if !c.waitExit(10 * time.Second) {
			t.Fatalf("child %s survived SIGKILL", c.name)
		}
		killed = append(killed, c)
		spawn(crashBeforeFlowDeliver, 1)
	}
	spawn(crashBeforeFlowDeliver, 1)
	spawn(crashBeforeFlowDeliver, 1)
	spawn(crashAfterFlowOutcome, 20)

	batch, err := client.NewBatch(ctx,
		queue.OnSuccess(queue.NewRawTask("cb-success", nil, queue.In(qname))),
		queue.OnComplete(queue.NewRawTask("cb-complete", nil, queue.In(qname))))
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
		_, err := batch.Add(ctx, tasks...)
		must(t, err)
		if i/step%4 == 1 {
			kill() // while members are added and run
		}
		reap()
	}
	must(t, batch.Close(ctx))
	must(t, r.rdb.Set(ctx, k.gate("closed"), "1", 0).Err())

	// more kills while the members run, then wait for the callbacks
	deadline := time.Now().Add(90 * time.Second)
	var bi *queue.BatchInfo
	for kills := 0; ; {
		reap()
		bi, err = insp.GetBatch(ctx, batch.ID())
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
	reap()
	t.Logf("batch of %d finished; %d workers died: %d killed by the test, %d after a flow ack, %d before delivering callbacks",
		total, len(killed), len(killed)-selfCrashed[crashAfterFlowOutcome]-selfCrashed[crashBeforeFlowDeliver],
		selfCrashed[crashAfterFlowOutcome], selfCrashed[crashBeforeFlowDeliver])
	if selfCrashed[crashAfterFlowOutcome] == 0 {
		t.Error("no worker died between writing a flow ack and forwarding it")
	}
	if selfCrashed[crashBeforeFlowDeliver] == 0 {
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
		startedByKilled := 0
		for _, c := range killed {
			if ok, _ := r.rdb.SIsMember(ctx, k.started(c.pid), cb).Result(); ok {
				startedByKilled++
			}
		}
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
	var live, died []*child
	seq := 0
	spawn := func(crash string, at int) {
		o := base
		o.Crash, o.CrashAt = crash, at
		seq++
		c := startChild(t, fmt.Sprintf("c%d", seq), o)
		c.waitReady(t, r.rdb)
		live = append(live, c)
	}
	spawn(crashBeforeFlowDeliver, 3)
	spawn(crashBeforeFlowDeliver, 5)
	spawn(crashAfterFlowOutcome, 4)

	tasks := make([]*queue.Task, links)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("cb-link", []byte(strconv.Itoa(i)), queue.In(r.queue))
	}
	id, err := r.client.EnqueueWorkflow(ctx, queue.Chain(tasks...))
	must(t, err)
	deadline := time.Now().Add(90 * time.Second)
	var wi *queue.WorkflowInfo
	for {
		for i := 0; i < len(live); i++ { // replace the dead
			if c := live[i]; c.exited() {
				live = append(live[:i], live[i+1:]...)
				i--
				died = append(died, c)
				spawn("", 0)
			}
		}
		wi, err = r.insp.GetWorkflow(ctx, id)
		must(t, err)
		if wi.State == queue.WorkflowSucceeded {
			break
		}
		if wi.State != queue.WorkflowRunning || time.Now().After(deadline) {
			t.Fatalf("chain %s after 90s: %d of %d links succeeded; why %q", wi.State, wi.Counts[queue.NodeSucceeded], links, wi.Why)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// on one server, an ack enqueues the link it releases: only a
	// cluster's releases wait for a delivery, where two more die
	if want := map[bool]int{true: 1, false: 3}[r.srv != nil]; len(died) < want {
		t.Fatalf("only %d of %d workers died at their crash points", len(died), want)
	}
	for _, n := range wi.Nodes {
		starts, _ := r.rdb.HGet(ctx, k.starts(), n.TaskID).Int()
		byDead := 0
		for _, c := range died {
			if ok, _ := r.rdb.SIsMember(ctx, k.started(c.pid), n.TaskID).Result(); ok {
				byDead++
			}
		}
		if starts < 1 || starts > 1+byDead {
			t.Fatalf("link %s started %d times; dead workers had started it %d times", n.Name, starts, byDead)
		}
		if completions(t, r.rdb, k, n.TaskID) < 1 {
			t.Fatalf("link %s never completed", n.Name)
		}
	}
	t.Logf("chain of %d links done; %d workers died", links, len(died))
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
	var live, died []*child
	seq := 0
	spawn := func(crash string, at int) {
		o := base
		o.Crash, o.CrashAt = crash, at
		seq++
		c := startChild(t, fmt.Sprintf("g%d", seq), o)
		c.waitReady(t, r.rdb)
		live = append(live, c)
	}
	selfCrashed := map[string]int{}
	reap := func() {
		for i := 0; i < len(live); i++ {
			if c := live[i]; c.exited() {
				live = append(live[:i], live[i+1:]...)
				i--
				died = append(died, c)
				selfCrashed[c.opts.Crash]++
				if c.opts.Crash == crashAfterFlowOutcome {
					spawn(crashBeforeFlowDeliver, 1) // whoever sees released nodes due first dies
				} else {
					spawn("", 0)
				}
			}
		}
	}
	spawn(crashBeforeFlowDeliver, 1)
	spawn(crashAfterFlowOutcome, 20)
	spawn("", 0)
	spawn("", 0)

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
		reap()
		wi, err = r.insp.GetWorkflow(ctx, id)
		must(t, err)
		if wi.State == queue.WorkflowSucceeded {
			break
		}
		if wi.State != queue.WorkflowRunning || time.Now().After(deadline) {
			t.Fatalf("workflow %s after %d kills: %d succeeded, %d enqueued, %d waiting; why %q",
				wi.State, kills, wi.Counts[queue.NodeSucceeded], wi.Counts[queue.NodeEnqueued], wi.Counts[queue.NodeWaiting], wi.Why)
		}
		// kill one worker each time another layer has finished
		// kill a worker without a crash point each time a sixth more of
		// the nodes succeeded
		if done := wi.Counts[queue.NodeSucceeded]; kills < 4 && done > (kills+1)*len(wi.Nodes)/6 {
			i := len(live) - 1
			for i > 0 && live[i].opts.Crash != "" {
				i--
			}
			c := live[i]
			live = append(live[:i:i], live[i+1:]...)
			c.signal(t, syscall.SIGKILL)
			if !c.waitExit(10 * time.Second) {
				t.Fatalf("child %s survived SIGKILL", c.name)
			}
			died = append(died, c)
			spawn(crashBeforeFlowDeliver, 1)
			kills++
		}
		time.Sleep(200 * time.Millisecond)
	}
	reap()
	t.Logf("workflow of %d nodes succeeded; %d workers died: %d after a flow ack, %d before delivering",
		len(wi.Nodes), len(died), selfCrashed[crashAfterFlowOutcome], selfCrashed[crashBeforeFlowDeliver])
	if len(wi.Nodes) != 1+layers*width || wi.Counts[queue.NodeSucceeded] != len(wi.Nodes) {
		t.Fatalf("nodes: %d, %d succeeded", len(wi.Nodes), wi.Counts[queue.NodeSucceeded])
	}
	// on one server, an ack enqueues the nodes it releases: only a
	// cluster's releases wait for a delivery
	if selfCrashed[crashAfterFlowOutcome] == 0 || (r.srv == nil && selfCrashed[crashBeforeFlowDeliver] == 0) {
		t.Errorf("crash points hit: %v", selfCrashed)
	}
	starts := r.rdb.HGetAll(ctx, k.starts()).Val()
	completed := r.rdb.HGetAll(ctx, k.completions()).Val()
	byDead := func(key func(int) string, id string) int {
		n := 0
		for _, c := range died {
			if ok, _ := r.rdb.SIsMember(ctx, key(c.pid), id).Result(); ok {
				n++
			}
		}
		return n
	}
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
