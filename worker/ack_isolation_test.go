package worker

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/serve"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// scriptArgs records the arguments of the script calls a client makes.
type scriptArgs struct {
	mu    sync.Mutex
	calls [][]string
}

// ackRefused opens the last error of a task whose ack Redis failed
// (internal/serve).
const ackRefused = "the handler succeeded, but Redis failed the script that acks the task"

func (h *scriptArgs) note(cmd redis.Cmder) {
	if cmd.Name() != "evalsha" {
		return
	}
	var args []string
	for _, a := range cmd.Args() {
		switch v := a.(type) {
		case string:
			args = append(args, v)
		case *string:
			args = append(args, *v)
		}
	}
	h.mu.Lock()
	h.calls = append(h.calls, args)
	h.mu.Unlock()
}

// first returns the first call that carried task id's outcome: a lease
// extension (the heartbeat's extend.lua) names every task in flight, and
// on a busy machine one runs between the starts and the acks, so it does
// not count.
func (h *scriptArgs) first(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	extend := script.Extend.Hash()
	for _, c := range h.calls {
		if len(c) > 1 && c[1] == extend {
			continue
		}
		if slices.Contains(c, id) {
			return c
		}
	}
	return nil
}

func (h *scriptArgs) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptArgs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.note(c)
		}
		return next(ctx, cmds)
	}
}

// TestAckBatchIsolation: one task's ack that the script fails on (its
// workflow's hash damaged: a child's task is gone, so the ack's release
// of the child fails) is carried in one batch with good acks: nodes of
// another workflow and plain tasks. The good tasks are acked once, and
// run once; the bad one goes dead, once, with the script's error as its
// last error, and its workflow fails with that reason. Its concurrency
// key is counted down once: the failed calls wrote nothing of the acks'
// own (another task of the key runs meanwhile). Before, every try
// of the batch failed, the worker tried it again and again, and each
// lease's expiry ran every task of the batch again. The batch goes once
// in a pop (the acks ride in the pop script) and once by the flusher
// (the ack script alone).
func TestAckBatchIsolation(t *testing.T) {
	t.Parallel()
	t.Run("Pop", func(t *testing.T) { t.Parallel(); testAckBatchIsolation(t, true) })
	t.Run("Flusher", func(t *testing.T) { t.Parallel(); testAckBatchIsolation(t, false) })
}

func testAckBatchIsolation(t *testing.T, byPop bool) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	r := &flowRig{rdb: rdb, qcfg: qcfg, client: client, insp: insp}

	// good: a workflow of three roots, each with a child, and three plain
	// tasks; bad: x, whose child y's task the test deletes
	good := queue.NewWorkflow()
	for _, x := range []string{"a1", "a2", "a3"} {
		good.Add(x, queue.NewRawTask(x, nil, queue.In("iso")))
		good.Add(x+"c", queue.NewRawTask(x+"c", nil, queue.In("iso")), queue.After(x))
	}
	goodID, err := client.EnqueueWorkflow(ctx, good)
	must(t, err)
	bad := queue.NewWorkflow()
	bad.Add("x", queue.NewRawTask("x", nil, queue.In("iso"), queue.Group("k")))
	bad.Add("y", queue.NewRawTask("y", nil, queue.In("iso")), queue.After("x"))
	badID, err := client.EnqueueWorkflow(ctx, bad)
	must(t, err)
	for _, p := range []string{"p1", "p2", "p3"} {
		_, err := client.Enqueue(ctx, queue.NewRawTask(p, nil, queue.In("iso")))
		must(t, err)
	}
	batch := []string{"a1", "a2", "a3", "x", "p1", "p2", "p3"}
	// holder runs beside the batch under x's key, to the end: x's ack
	// must count its key down once, whatever the failed calls
	_, err = client.Enqueue(ctx, queue.NewRawTask("holder", nil, queue.In("iso"), queue.Group("k")))
	must(t, err)
	must(t, insp.SetLimits(ctx, "iso", queue.Limits{GroupConcurrency: 2}))
	hold := make(chan struct{})

	// the batch's handlers wait for one another, so their acks are taken
	// together (beforeTake below)
	var log runLog
	var mu sync.Mutex
	sids := map[string]string{}
	started := make(chan struct{}, len(batch)+1)
	gate := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(task.Type)
		if task.Type == "holder" {
			started <- struct{}{}
			<-hold
			return nil
		}
		if slices.Contains(batch, task.Type) && log.count(task.Type) == 1 {
			mu.Lock()
			sids[task.Type] = storedID(task)
			mu.Unlock()
			started <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	cfg := Config{Config: qcfg, Queues: map[string]int{"iso": 1}, Concurrency: 16, Lease: 3 * time.Second,
		WorkflowSweep: 100 * time.Millisecond}
	cfg.Logger = testLogger(t)
	wrdb := srv.Client(t)
	calls := &scriptArgs{}
	wrdb.AddHook(calls)
	s, err := NewServer(wrdb, cfg, h)
	must(t, err)
	// armed, the taker named by byPop waits until the whole batch is in
	// the outbox and takes it; the other waits until it did
	var armed atomic.Bool
	setProbe(s, &serve.ProbeFuncs{OnBeforeTake: func(pop bool) {
		deadline := time.Now().Add(10 * time.Second)
		for armed.Load() && time.Now().Before(deadline) {
			if pop == byPop && s.engine.Outcomes() >= len(batch) {
				armed.Store(false)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}})
	must(t, s.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	var held sync.Once
	release := func() { held.Do(func() { close(hold) }) }
	t.Cleanup(release) // before the shutdown
	for range len(batch) + 1 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatalf("the batch's tasks did not all start: runs %v", log.order())
		}
	}
	// damage the bad workflow: y's task is gone, as if y was released
	// before, so x's ack cannot release it
	W := keys.Home(qcfg.Prefix, keys.HomeOf(badID)).Workflow(badID)
	if n := rdb.HDel(ctx, W, "e:y").Val(); n != 1 {
		t.Fatalf("HDEL e:y removed %d fields", n)
	}
	armed.Store(true)
	close(gate)

	once := map[string]int{"a1": 1, "a2": 1, "a3": 1, "a1c": 1, "a2c": 1, "a3c": 1, "p1": 1, "p2": 1, "p3": 1, "x": 1, "y": 0, "holder": 1}
	wi := waitRuns(t, r, goodID, queue.StateSucceeded, &log, once)
	if wi.Counts[queue.StateSucceeded] != 6 {
		t.Fatalf("the good workflow: %s", nodeStates(wi))
	}
	wi = waitRuns(t, r, badID, queue.StateFailed, &log, once)
	if got := nodeStates(wi); got != "x=dead y=failed" {
		t.Fatalf("the bad workflow: %s", got)
	}
	if !strings.Contains(wi.Why, "node x is dead") || !strings.Contains(wi.Why, ackRefused) {
		t.Fatalf("the bad workflow's why: %q", wi.Why)
	}
	ti, err := insp.GetTask(ctx, "iso", wi.Node("x").TaskID)
	must(t, err)
	if ti.State != queue.StateDead || ti.Attempts != 1 || !strings.Contains(ti.LastError, ackRefused) || !strings.Contains(ti.LastError, "e:y") {
		t.Fatalf("x's task: state %s, attempts %d, last error %q", ti.State, ti.Attempts, ti.LastError)
	}
	// the whole batch went in one call, the bad ack among the good ones
	mu.Lock()
	first := calls.first(sids["x"])
	for _, x := range batch {
		if !slices.Contains(first, sids[x]) {
			t.Fatalf("the first call that carried x's ack did not carry %s's: %q", x, first)
		}
	}
	mu.Unlock()
	// nothing is left to run again: every task finished but holder
	waitFor(t, 30*time.Second, "the queue to be empty", func() bool {
		qi, err := insp.QueueInfo(ctx, "iso")
		return err == nil && qi.Pending+qi.Retry+qi.Scheduled == 0 && qi.Active == 1 && qi.Dead == 1
	})
	// x's key counts holder alone: x's ack and death counted it down once
	if n := rdb.HGet(ctx, keys.For(qcfg.Prefix, "iso", 0).KeyActive(), "k").Val(); n != "1" {
		t.Fatalf("key k counts %q tasks running, want 1 (holder)", n)
	}
	release()
	waitFor(t, 30*time.Second, "holder done", func() bool {
		qi, err := insp.QueueInfo(ctx, "iso")
		return err == nil && qi.Active == 0
	})
	checkRuns(t, &log, once)
}
