package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestHealthyRedisIsClean: after a normal run of every kind of task
// (plain, scheduled, retried, dead, unique, a caller's TaskID, groups,
// compressed payloads, a workflow, a chain and a batch) the doctor finds
// nothing, and its repair does nothing.
func TestHealthyRedisIsClean(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// compressed payloads, so that a dictionary is learned and stored
	r.cfg.Compression, r.cfg.CompressAbove = "fast", 64
	var err error
	if r.client, err = queue.NewClient(r.rdb, r.cfg); err != nil {
		t.Fatal(err)
	}
	var runs counter
	failedOnce := map[string]bool{}
	h := func(ctx context.Context, task *worker.Task) error {
		runs.count(task.ID)
		switch task.Type {
		case "flaky":
			runs.mu.Lock()
			first := !failedOnce[task.ID]
			failedOnce[task.ID] = true
			runs.mu.Unlock()
			if first {
				return errors.New("once")
			}
		case "doomed":
			return worker.SkipRetry(errors.New("never"))
		}
		return nil
	}
	stop := r.serve(t, h, "default", "other")

	r.enqueue(t, 20, "plain")
	r.enqueue(t, 5, "kept", queue.Retention(time.Hour))
	r.enqueue(t, 3, "later", queue.ProcessIn(200*time.Millisecond))
	r.enqueue(t, 3, "flaky", queue.Retention(time.Hour))
	r.enqueue(t, 2, "doomed")
	r.enqueue(t, 1, "unique", queue.UniqueBy("u1", time.Hour))
	r.enqueue(t, 1, "unique", queue.UniqueUntilFinished(0), queue.UniqueBy("u2", time.Hour))
	r.enqueue(t, 1, "unique", queue.UniqueUntilFinished(time.Minute), queue.UniqueBy("u3", time.Hour))
	r.enqueue(t, 1, "chosen", queue.TaskID("my-task-1"))
	r.enqueue(t, 1, "chosen", queue.TaskID("my-task-2"), queue.Retention(time.Hour))
	for g := range 4 {
		r.enqueue(t, 5, "grouped", queue.Group(fmt.Sprintf("tenant-%d", g)))
	}
	doc, _ := json.Marshal(map[string]any{"name": "a fairly repetitive document", "items": []string{"alpha", "beta", "gamma", "delta", "alpha", "beta"}})
	for range 40 {
		if _, err := r.client.Enqueue(ctx, queue.NewRawTask("doc", doc)); err != nil {
			t.Fatal(err)
		}
	}
	r.enqueue(t, 2, "elsewhere", queue.In("other"))

	w := queue.NewWorkflow()
	w.Add("a", queue.NewRawTask("wf", []byte("a")))
	w.Add("b", queue.NewRawTask("wf", []byte("b")), queue.After("a"))
	w.Add("c", queue.NewRawTask("wf", []byte("c"), queue.In("other")), queue.After("a"))
	w.Add("d", queue.NewRawTask("wf", []byte("d")), queue.After("b"), queue.After("c"))
	if _, err := r.client.EnqueueWorkflow(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.EnqueueWorkflow(ctx, queue.Chain(
		queue.NewRawTask("link", []byte("1")), queue.NewRawTask("link", []byte("2")), queue.NewRawTask("link", []byte("3")))); err != nil {
		t.Fatal(err)
	}
	batch, err := r.client.NewBatch(ctx, queue.BatchOptions{OnSuccess: queue.NewRawTask("cb", []byte("ok")), OnComplete: queue.NewRawTask("cb", []byte("all"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.AddToBatch(ctx, batch, queue.NewRawTask("member", []byte("1")), queue.NewRawTask("member", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	if err := r.client.CloseBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}

	// every task ran: the flaky ones twice; the workflow's four nodes, the
	// chain's three links, the batch's two members and two callbacks
	r.settled(t, "default", func() bool {
		qi, err := r.insp.QueueInfo(ctx, "other")
		return err == nil && qi.Pending+qi.Active+qi.Scheduled+qi.Retry == 0 && runs.total() >= 20+5+3+6+2+3+2+20+40+2+4+3+2+2
	})
	stop()
	rep := r.audit(t, false)
	if rep.Violations != 0 {
		t.Fatalf("a healthy Redis: %d violations:%s", rep.Violations, describe(rep))
	}
	if rep.Partitions < 2 || rep.Keys == 0 {
		t.Fatalf("audited %d partitions, %d keys", rep.Partitions, rep.Keys)
	}
	t.Logf("audited %d queues, %d partitions, %d keys in %s", rep.Queues, rep.Partitions, rep.Keys, rep.Took)
	rep = r.audit(t, true)
	if rep.Violations != 0 || rep.Repaired != 0 {
		t.Fatalf("repair of a healthy Redis: %d violations, %d repaired:%s", rep.Violations, rep.Repaired, describe(rep))
	}
}
