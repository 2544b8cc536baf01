package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestWorkflowRelease: on one Redis server, the script that releases a
// node enqueues its task, with what the task asked for. Each case runs
// a root in queue fa with children in fb, and the graph to its end.
func TestWorkflowRelease(t *testing.T) {
	t.Parallel()
	t.Run("NoOutbox", func(t *testing.T) { t.Parallel(); testReleaseNoOutbox(t, singleFlowRig(t)) })
	t.Run("Delayed", func(t *testing.T) { t.Parallel(); testReleaseDelayed(t, singleFlowRig(t)) })
	t.Run("RouteInTask", func(t *testing.T) { t.Parallel(); testReleaseRouteInTask(t, singleFlowRig(t)) })
	t.Run("Keyed", func(t *testing.T) { t.Parallel(); testReleaseKeyed(t, singleFlowRig(t)) })
	t.Run("ClosedPartition", func(t *testing.T) { t.Parallel(); testReleaseClosedPartition(t, singleFlowRig(t)) })
	t.Run("RecordedForOutbox", func(t *testing.T) { t.Parallel(); testReleaseRecordedForOutbox(t, singleFlowRig(t)) })
	t.Run("BinaryDelivery", func(t *testing.T) { t.Parallel(); testReleaseBinaryDelivery(t, singleFlowRig(t)) })
	t.Run("ExtendRecordedForOutbox", func(t *testing.T) { t.Parallel(); testReleaseExtendRecordedForOutbox(t, singleFlowRig(t)) })
	t.Run("MsgpackChildLists", func(t *testing.T) { t.Parallel(); testReleaseMsgpackChildLists(t, singleFlowRig(t)) })
	t.Run("OnlyParentGainsParent", func(t *testing.T) { t.Parallel(); testReleaseOnlyParentGainsParent(t, singleFlowRig(t)) })
	t.Run("OnlyParentCancelled", func(t *testing.T) { t.Parallel(); testReleaseOnlyParentCancelled(t, singleFlowRig(t)) })
}

// serveOnly starts a worker on queue q alone, with handler h.
func serveOnly(t *testing.T, r *flowRig, q string, h Handler) {
	t.Helper()
	cfg := Config{Config: r.qcfg, Queues: map[string]int{q: 1}, Concurrency: 2, WorkflowSweep: time.Hour}
	cfg.Logger = testLogger(t)
	startServer(t, r.rdb, cfg, h)
}

// testReleaseOnlyParentGainsParent: a child recorded with one parent is
// released by that parent's success without a read of its state (the
// parent's list marks the edge in upper case). An extension that makes a
// new node its parent too (queue.Before) must hold it back: the child
// waits for the new parent, then runs once.
func testReleaseOnlyParentGainsParent(t *testing.T, r *flowRig) {
	ctx := context.Background()
	wf := queue.NewWorkflow()
	wf.Add("root", queue.NewRawTask("root", nil, queue.In("fa")))
	wf.Add("child", queue.NewRawTask("child", nil, queue.In("fb")), queue.Edge{Parent: "root", OnDead: queue.EdgeSkip})
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	W := keys.Home(r.qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	if v := r.rdb.HGet(ctx, W, "c:root").Val(); v != "Kchild" {
		t.Fatalf("root's children: %q, want \"Kchild\"", v)
	}
	ext := queue.NewWorkflow()
	ext.Add("late", queue.NewRawTask("late", nil, queue.In("cb")), queue.Before("child"))
	must(t, r.client.ExtendWorkflow(ctx, id, ext))
	var log runLog
	count := HandlerFunc(func(_ context.Context, task *Task) error {
		log.add(task.Type)
		return nil
	})
	serveOnly(t, r, "fa", count)
	wi := waitNode(t, r, id, "root", queue.StateSucceeded)
	if got := wi.Node("child").State; got != queue.StateWaiting {
		t.Fatalf("child is %s after root succeeded, with late still enqueued; want waiting", got)
	}
	if qi, err := r.insp.QueueInfo(ctx, "fb"); err != nil || qi.Pending != 0 {
		t.Fatalf("queue fb: %+v, %v; want no task pending", qi, err)
	}
	// the policy reads the same, whatever the letter's case
	if got, want := fmt.Sprint(wi.Node("child").Parents), fmt.Sprint([]queue.Edge{{Parent: "root", OnDead: queue.EdgeSkip}, {Parent: "late", OnDead: queue.EdgeFail}}); got != want {
		t.Fatalf("child's parents: %s, want %s", got, want)
	}
	serveOnly(t, r, "cb", count)
	serveOnly(t, r, "fb", count)
	wi = waitWorkflow(t, r, id, queue.StateSucceeded)
	if got := nodeStates(wi); got != "root=succeeded child=succeeded late=succeeded" {
		t.Fatalf("nodes: %s", got)
	}
	if o := log.order(); len(o) != 3 || o[2] != "child" {
		t.Fatalf("runs %v, want child last and each node once", o)
	}
}

// testReleaseOnlyParentCancelled: a workflow cancelled while a child's
// only parent runs; the parent succeeds all the same, and its child, an
// upper-case edge in its list, stays cancelled and never runs.
func testReleaseOnlyParentCancelled(t *testing.T, r *flowRig) {
	ctx := context.Background()
	wf := queue.NewWorkflow()
	wf.Add("root", queue.NewRawTask("root", nil, queue.In("fa")))
	wf.Add("child", queue.NewRawTask("child", nil, queue.In("fb")), queue.After("root"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	started, finish := make(chan struct{}), make(chan struct{})
	var log runLog
	h := HandlerFunc(func(_ context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "root" {
			close(started)
			<-finish // it ignores the cancel, and succeeds
		}
		return nil
	})
	serveOnly(t, r, "fa", h)
	serveOnly(t, r, "fb", h)
	<-started
	must(t, r.insp.CancelWorkflow(ctx, id))
	close(finish)
	wi := waitNode(t, r, id, "root", queue.StateSucceeded)
	if wi.State != queue.StateCancelled || wi.Node("child").State != queue.StateCancelled {
		t.Fatalf("workflow %s, nodes %s; want cancelled, child cancelled", wi.State, nodeStates(wi))
	}
	if qi, err := r.insp.QueueInfo(ctx, "fb"); err != nil || qi.Pending+qi.Active != 0 || log.count("child") != 0 {
		t.Fatalf("queue fb: %+v, %v, child ran %d times; want it never enqueued", qi, err, log.count("child"))
	}
}

// waitNode waits until node x of workflow id is in state want, and
// returns the workflow.
func waitNode(t *testing.T, r *flowRig, id, x string, want queue.State) *queue.WorkflowInfo {
	t.Helper()
	var wi *queue.WorkflowInfo
	var err error
	waitFor(t, 30*time.Second, "node "+x+" "+string(want), func() bool {
		wi, err = r.insp.GetWorkflow(context.Background(), id)
		return err == nil && wi.Node(x) != nil && wi.Node(x).State == want
	})
	return wi
}

// fanOut records a root in fa with n children in fb, each built by child.
func fanOut(t *testing.T, r *flowRig, n int, child func(i int) *queue.Task) string {
	t.Helper()
	wf := queue.NewWorkflow()
	wf.Add("root", queue.NewRawTask("root", nil, queue.In("fa")))
	for i := range n {
		wf.Add(fmt.Sprintf("c%d", i), child(i), queue.After("root"))
	}
	id, err := r.client.EnqueueWorkflow(context.Background(), wf)
	must(t, err)
	return id
}

// testReleaseNoOutbox: the released children are pending in their queue
// as soon as the root's ack is written: nothing passed through the home's
// outbox, and no ID was claimed for them.
func testReleaseNoOutbox(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 20, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) })
	home := keys.Home(r.qcfg.Prefix, keys.HomeOf(id))
	// only the root's queue is served: the children wait where they went
	cfg := Config{Config: r.qcfg, Queues: map[string]int{"fa": 1}, Concurrency: 2, WorkflowSweep: time.Hour}
	cfg.Logger = testLogger(t)
	startServer(t, r.rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	waitFor(t, 30*time.Second, "20 children pending", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "fb")
		return err == nil && qi.Pending == 20
	})
	if n := r.rdb.ZCard(ctx, home.Out()).Val(); n != 0 {
		t.Fatalf("the home's outbox holds %d entries, want none", n)
	}
	if ks := r.rdb.Keys(ctx, "*:ids:*").Val(); len(ks) != 0 {
		t.Fatalf("ID claims written: %v", ks)
	}
	if reg := r.rdb.HGet(ctx, keys.Queues(r.qcfg.Prefix), "fb").Val(); reg != "2" {
		t.Fatalf("queue fb registered as %q, want 2 partitions", reg)
	}
	wi, err := r.insp.GetWorkflow(ctx, id)
	must(t, err)
	if wi.Counts[queue.StateEnqueued] != 20 || wi.Counts[queue.StateSucceeded] != 1 {
		t.Fatalf("workflow: %s", nodeStates(wi))
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if n := log.count("child"); n != 20 {
		t.Fatalf("children ran %d times, want 20", n)
	}
}

// testReleaseRouteInTask: a node with no delay is recorded with its route
// in front of its message (wire.NodeTask), so its release reads one field;
// a delayed one is recorded bare and routed by its record. Both run once.
func testReleaseRouteInTask(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 2, func(i int) *queue.Task {
		if i == 0 {
			return queue.NewRawTask("later", nil, queue.In("fb"), queue.ProcessIn(time.Millisecond))
		}
		return queue.NewRawTask("now", nil, queue.In("fb"))
	})
	key := keys.Home(r.qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	wi, err := r.insp.GetWorkflow(ctx, id)
	must(t, err)
	raw, err := r.rdb.HGet(ctx, key, "e:c1").Bytes()
	must(t, err)
	taskID, q, part, msg, ok := wire.SplitNodeTask(raw)
	if !ok || wire.PublicID(taskID) != wi.Node("c1").TaskID || q != "fb" || part < 0 || part > 1 || len(msg) == 0 || msg[0] < 0x90 {
		t.Fatalf("e:c1 = %q, want the task's ID, queue fb, a partition of 2 and its message", raw)
	}
	raw, err = r.rdb.HGet(ctx, key, "e:c0").Bytes()
	must(t, err)
	if _, _, _, _, ok := wire.SplitNodeTask(raw); ok {
		t.Fatalf("e:c0 = %q: a delayed node's task carries a route", raw)
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if log.count("now") != 1 || log.count("later") != 1 {
		t.Fatalf("children ran %d and %d times, want once each", log.count("now"), log.count("later"))
	}
}

// testReleaseDelayed: a child with ProcessIn is scheduled when released,
// not pending; once due (an operator runs it now), the workflow ends.
func testReleaseDelayed(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 2, func(i int) *queue.Task {
		if i == 0 {
			return queue.NewRawTask("later", nil, queue.In("fb"), queue.ProcessIn(time.Hour))
		}
		return queue.NewRawTask("now", nil, queue.In("fb"))
	})
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	var later *queue.WorkflowNode
	waitFor(t, 30*time.Second, "the delayed child scheduled, the other run", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "fb")
		if err != nil || qi.Scheduled != 1 || log.count("now") != 1 {
			return false
		}
		wi, err := r.insp.GetWorkflow(ctx, id)
		if err != nil {
			return false
		}
		later = wi.Node("c0")
		return later != nil && later.State == queue.StateEnqueued
	})
	if log.count("later") != 0 {
		t.Fatal("the delayed child ran before it was due")
	}
	ti, err := r.insp.GetTask(ctx, "fb", later.TaskID)
	must(t, err)
	if ti.State != queue.StateScheduled || ti.NextProcessAt.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("delayed child: state %s, due %v", ti.State, ti.NextProcessAt)
	}
	must(t, r.insp.RunTask(ctx, "fb", later.TaskID))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if log.count("later") != 1 {
		t.Fatalf("the delayed child ran %d times", log.count("later"))
	}
}

// testReleaseKeyed: children with a group are released into
// their keys' turns, where Inspector.Keys counts them, and each runs once.
func testReleaseKeyed(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 12, func(i int) *queue.Task {
		return queue.NewRawTask("keyed", nil, queue.In("fb"), queue.Group(fmt.Sprintf("tenant-%d", i%3)))
	})
	// only the root's queue is served: the children wait in their keys'
	// turns, four per key
	cfg := Config{Config: r.qcfg, Queues: map[string]int{"fa": 1}, Concurrency: 2, WorkflowSweep: time.Hour}
	cfg.Logger = testLogger(t)
	root := startServer(t, r.rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	waitFor(t, 30*time.Second, "3 keys of 4 waiting tasks", func() bool {
		page, err := r.insp.Groups(ctx, queue.GroupQuery{Queue: "fb"})
		if err != nil || len(page.Groups) != 3 {
			return false
		}
		for _, k := range page.Groups {
			if k.Waiting != 4 {
				return false
			}
		}
		return true
	})
	must(t, root.Shutdown(ctx))
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if n := log.count("keyed"); n != 12 {
		t.Fatalf("keyed children ran %d times, want 12", n)
	}
	page, err := r.insp.Groups(ctx, queue.GroupQuery{Queue: "fb"})
	must(t, err)
	for _, k := range page.Groups {
		if k.Waiting != 0 {
			t.Fatalf("key %s still has %d waiting", k.Group, k.Waiting)
		}
	}
}

// testReleaseClosedPartition: a child whose partition closed between the
// workflow's record and its release goes through the home's outbox, is
// routed again, and runs once.
func testReleaseClosedPartition(t *testing.T, r *flowRig) {
	ctx := context.Background()
	const n = 16
	id := fanOut(t, r, n, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) })
	home := keys.Home(r.qcfg.Prefix, keys.HomeOf(id))
	closed := 0
	for i := range n {
		// the node's record: {task ID, queue, type, partition, ...}
		var m []any
		raw, err := r.rdb.HGet(ctx, home.Workflow(id), fmt.Sprintf("m:c%d", i)).Bytes()
		must(t, err)
		must(t, msgpack.Unmarshal(raw, &m))
		if len(m) >= 4 && fmt.Sprint(m[3]) == "1" {
			closed++
		}
	}
	if closed == 0 {
		t.Skip("no child was routed to partition 1") // 16 children on 2 partitions: 1 in 65,536
	}
	must(t, r.insp.SetPartitions(ctx, "fb", 1))
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if got := log.count("child"); got != n {
		t.Fatalf("children ran %d times, want %d (%d were routed to the closed partition)", got, n, closed)
	}
	if ks := r.rdb.Keys(ctx, "*:ids:*").Val(); len(ks) == 0 {
		t.Fatal("no ID claims: no child went through the outbox")
	}
}

// testReleaseRecordedForOutbox: a workflow recorded without the one-server
// setting (by a producer on a cluster client, or before it existed)
// still releases through the outbox when its nodes' acks apply at home.
func testReleaseRecordedForOutbox(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 10, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) })
	home := keys.Home(r.qcfg.Prefix, keys.HomeOf(id))
	// as a producer on a cluster client writes it: no dr, deliveries
	must(t, r.rdb.HDel(ctx, home.Workflow(id), "dr").Err())
	for i := range 10 {
		recordAsDelivery(t, r, home.Workflow(id), fmt.Sprintf("c%d", i), false)
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if got := log.count("child"); got != 10 {
		t.Fatalf("children ran %d times, want 10", got)
	}
	if ks := r.rdb.Keys(ctx, "*:ids:*").Val(); len(ks) == 0 {
		t.Fatal("no ID claims: the children did not go through the outbox")
	}
}

// testReleaseExtendRecordedForOutbox: a workflow released straight into
// queues stores each node's message and its route in its record; an
// extension from a producer on one server, which sends them so, of a
// workflow recorded without the one-server setting stores deliveries,
// which the outbox reads: the new nodes run once each, through it.
func testReleaseExtendRecordedForOutbox(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 2, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) })
	key := keys.Home(r.qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	f, err := r.rdb.HMGet(ctx, key, "e:c0", "m:c0").Result()
	must(t, err)
	if _, err := wire.DecodeDelivery([]byte(f[0].(string))); err == nil {
		t.Fatal("e:c0 holds a delivery, want the task's message")
	}
	var m []any
	must(t, msgpack.Unmarshal([]byte(f[1].(string)), &m))
	// task ID, queue, type, partition, partitions, at, in: fb has 2 partitions
	if len(m) != 7 || m[1] != "fb" || fmt.Sprint(m[4:]) != "[2 0 0]" {
		t.Fatalf("m:c0 = %v, want the route of fb", m)
	}
	must(t, r.rdb.HDel(ctx, key, "dr").Err())
	for i := range 2 {
		recordAsDelivery(t, r, key, fmt.Sprintf("c%d", i), false)
	}
	ext := queue.NewWorkflow()
	ext.Add("late", queue.NewRawTask("child", nil, queue.In("fb")), queue.After("root"))
	ext.Add("later", queue.NewRawTask("child", nil, queue.In("fb"), queue.ProcessIn(time.Millisecond)), queue.After("late"))
	must(t, r.client.ExtendWorkflow(ctx, id, ext))
	for _, x := range []string{"late", "later"} {
		raw, err := r.rdb.HGet(ctx, key, "e:"+x).Bytes()
		must(t, err)
		if _, err := wire.DecodeDelivery(raw); err != nil {
			t.Fatalf("e:%s: %v, want a delivery", x, err)
		}
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if got := log.count("child"); got != 4 {
		t.Fatalf("children ran %d times, want 4", got)
	}
}

// recordAsDelivery rewrites node x of workflow key as producers before
// routes wrote it: its delivery in e:x and a record of four fields, with
// its message as msgpack binary when binary, as producers before the
// one-server release wrote it.
func recordAsDelivery(t *testing.T, r *flowRig, key, x string, binary bool) {
	t.Helper()
	ctx := context.Background()
	f, err := r.rdb.HMGet(ctx, key, "e:"+x, "m:"+x).Result()
	must(t, err)
	var m struct {
		ID, Queue, Type               string
		Partition, Partitions, At, In int64
	}
	dec := msgpack.NewDecoder(strings.NewReader(f[1].(string)))
	_, err = dec.DecodeArrayLen()
	must(t, err)
	for _, v := range []any{&m.ID, &m.Queue, &m.Type, &m.Partition, &m.Partitions, &m.At, &m.In} {
		must(t, dec.Decode(v))
	}
	msg := []byte(f[0].(string))
	if _, _, _, bare, ok := wire.SplitNodeTask(msg); ok {
		msg = bare
	}
	d := wire.Delivery{Queue: m.Queue, Partition: int(m.Partition), Partitions: int(m.Partitions), ID: m.ID, Msg: msg, At: m.At, In: m.In}
	var e []byte
	if binary {
		e, err = msgpack.Marshal([]any{d.Queue, d.Partition, d.Partitions, d.ID, d.Msg, d.At, d.In, d.Unique, d.UniqueTTL})
	} else {
		e, err = wire.EncodeDelivery(&d)
	}
	must(t, err)
	meta, err := msgpack.Marshal([]any{m.ID, m.Queue, m.Type, m.Partition})
	must(t, err)
	must(t, r.rdb.HSet(ctx, key, "e:"+x, e, "m:"+x, meta).Err())
}

// testReleaseBinaryDelivery: a node whose delivery holds its message as
// msgpack binary, as producers before the one-server release wrote it,
// which Redis's cmsgpack cannot read, goes through the outbox instead;
// its siblings go straight into their queue. Each runs once.
func testReleaseBinaryDelivery(t *testing.T, r *flowRig) {
	ctx := context.Background()
	id := fanOut(t, r, 3, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) })
	key := keys.Home(r.qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	recordAsDelivery(t, r, key, "c1", true)
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	waitWorkflow(t, r, id, queue.StateSucceeded)
	if got := log.count("child"); got != 3 {
		t.Fatalf("children ran %d times, want 3", got)
	}
	if ks := r.rdb.Keys(ctx, "*:ids:*").Val(); len(ks) != 1 {
		t.Fatalf("ID claim buckets %v: want the binary one's claim alone", ks)
	}
}

// testReleaseMsgpackChildLists: a workflow whose children lists are in
// msgpack, as builds before the spaced form recorded them, keeps its
// edges: GetWorkflow reads them, an extension adds to them, and the graph
// runs to its end, its skip edge followed, each node once. A node whose
// route the release cannot read by hand (a type of 40 bytes) is released
// all the same.
func testReleaseMsgpackChildLists(t *testing.T, r *flowRig) {
	ctx := context.Background()
	long := strings.Repeat("t", 40)
	wf := queue.NewWorkflow()
	wf.Add("root", queue.NewRawTask("root", nil, queue.In("fa")))
	wf.Add("a", queue.NewRawTask(long, nil, queue.In("fb")), queue.After("root"))
	wf.Add("b", queue.NewRawTask("fails", nil, queue.In("fb"), queue.MaxRetry(0)), queue.After("root"))
	wf.Add("c", queue.NewRawTask("c", nil, queue.In("fb")), queue.After("a"), queue.Edge{Parent: "b", OnDead: queue.EdgeSkip})
	wf.Add("d", queue.NewRawTask("d", nil, queue.In("fb")), queue.After("c"))
	id, err := r.client.EnqueueWorkflow(ctx, wf)
	must(t, err)
	before, err := r.insp.GetWorkflow(ctx, id)
	must(t, err)
	W := keys.Home(r.qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	fields, err := r.rdb.HGetAll(ctx, W).Result()
	must(t, err)
	rewritten := 0
	for f, v := range fields {
		if !strings.HasPrefix(f, "c:") {
			continue
		}
		var old [][]string
		for _, c := range strings.Fields(v) {
			// lists in msgpack predate the upper-case letter of an only parent
			old = append(old, []string{c[1:], strings.ToLower(c[:1])})
		}
		b, err := msgpack.Marshal(old)
		must(t, err)
		must(t, r.rdb.HSet(ctx, W, f, b).Err())
		rewritten++
	}
	if rewritten != 4 {
		t.Fatalf("%d children lists rewritten, want 4 (root, a, b, c)", rewritten)
	}
	mid, err := r.insp.GetWorkflow(ctx, id)
	must(t, err)
	for _, n := range before.Nodes {
		if got, want := fmt.Sprint(mid.Node(n.Name).Parents), fmt.Sprint(n.Parents); got != want {
			t.Fatalf("node %s: parents %s read from msgpack lists, want %s", n.Name, got, want)
		}
	}
	ext := queue.NewWorkflow()
	ext.Add("x", queue.NewRawTask("x", nil, queue.In("fb")), queue.After("root"))
	must(t, r.client.ExtendWorkflow(ctx, id, ext))
	// x has root alone for a parent: its letter is in upper case
	if v := r.rdb.HGet(ctx, W, "c:root").Val(); v != "fa fb Fx" {
		t.Fatalf("root's children after the extension: %q, want \"fa fb Fx\"", v)
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "fails" {
			return errors.New("b fails")
		}
		return nil
	}))
	wi := waitWorkflow(t, r, id, queue.StateFailed)
	if got := nodeStates(wi); got != "root=succeeded a=succeeded b=dead c=skipped d=failed x=succeeded" {
		t.Fatalf("nodes: %s", got)
	}
	for _, typ := range []string{"root", long, "fails", "x"} {
		if n := log.count(typ); n != 1 {
			t.Fatalf("%s ran %d times, want once", typ, n)
		}
	}
	if n := log.count("c") + log.count("d"); n != 0 {
		t.Fatalf("skipped and failed nodes ran %d times", n)
	}
	if got, want := fmt.Sprint(wi.Node("c").Parents), fmt.Sprint(before.Node("c").Parents); got != want {
		t.Fatalf("c's parents: %s, want %s", got, want)
	}
}

// TestWorkflowAcksInOneBatch: nodes of two workflows and plain tasks in
// one queue, acked together in the worker's batches, each run once: both
// workflows succeed and every plain task is done.
func TestWorkflowAcksInOneBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := singleFlowRig(t)
	var ids []string
	for range 2 {
		ids = append(ids, fanOut(t, r, 40, func(int) *queue.Task { return queue.NewRawTask("child", nil, queue.In("fb")) }))
	}
	for range 40 {
		_, err := r.client.Enqueue(ctx, queue.NewRawTask("plain", nil, queue.In("fb")))
		must(t, err)
	}
	var log runLog
	r.server(t, HandlerFunc(func(_ context.Context, task *Task) error { log.add(task.Type); return nil }))
	for _, id := range ids {
		wi := waitWorkflow(t, r, id, queue.StateSucceeded)
		if wi.Counts[queue.StateSucceeded] != 41 {
			t.Fatalf("workflow %s: %s", id, nodeStates(wi))
		}
	}
	waitFor(t, 30*time.Second, "40 plain tasks done", func() bool { return log.count("plain") == 40 })
	if c, p := log.count("child"), log.count("root"); c != 80 || p != 2 {
		t.Fatalf("children ran %d times, roots %d, want 80 and 2", c, p)
	}
}

// TestWorkflowSuccessAfterDeath: a child waits on two parents; one dies
// first, over a run or a skip edge, and the other succeeds after, so the
// success meets a child whose state records the death, not a plain count
// of parents. The child then runs once, or is skipped, as its edge says.
func TestWorkflowSuccessAfterDeath(t *testing.T) {
	t.Parallel()
	for _, policy := range []queue.EdgePolicy{queue.EdgeRun, queue.EdgeSkip} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := singleFlowRig(t)
			wf := queue.NewWorkflow()
			wf.Add("dies", queue.NewRawTask("dies", nil, queue.In("fa")))
			wf.Add("late", queue.NewRawTask("late", nil, queue.In("fb")))
			wf.Add("c", queue.NewRawTask("c", nil, queue.In("fb")), queue.Edge{Parent: "dies", OnDead: policy}, queue.After("late"))
			id, err := r.client.EnqueueWorkflow(ctx, wf)
			must(t, err)
			var log runLog
			r.server(t, HandlerFunc(func(ctx context.Context, task *Task) error {
				log.add(task.Type)
				switch task.Type {
				case "dies":
					return SkipRetry(errors.New("broke"))
				case "late":
					// succeed only once the other parent is dead
					for {
						wi, err := r.insp.GetWorkflow(ctx, id)
						if err == nil && wi.Node("dies").State == queue.StateDead {
							return nil
						}
						select {
						case <-ctx.Done():
							return ctx.Err()
						case <-time.After(5 * time.Millisecond):
						}
					}
				}
				return nil
			}))
			wi := waitWorkflow(t, r, id, queue.StateFailed)
			want, runs := "dies=dead late=succeeded c=succeeded", 1
			if policy == queue.EdgeSkip {
				want, runs = "dies=dead late=succeeded c=skipped", 0
			}
			if got := nodeStates(wi); got != want {
				t.Fatalf("nodes %s, want %s", got, want)
			}
			if log.count("c") != runs || log.count("late") != 1 || log.count("dies") != 1 {
				t.Fatalf("runs %v, want c %d times, the parents once each", log.order(), runs)
			}
		})
	}
}
