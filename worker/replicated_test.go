package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestWaitReplicasAcks: with queue.Config.WaitReplicas a worker writes
// its outcomes through the flusher, each followed by WAIT on the master
// that ran it. Every task runs once; with one partition's replica frozen,
// its tasks still run once, their acks stand, and the worker warns that
// they are not confirmed by replicas instead of writing them again.
func TestWaitReplicasAcks(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t, 3)
	rdb := clusterClient(t, cl)
	prefix := redistest.Prefix(t)
	q, masters := spreadQueue(t, cl, prefix, 3)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	var mu sync.Mutex
	runs := map[string]int{}
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		runs[task.ID]++
		mu.Unlock()
		return nil
	})
	// serve starts a worker whose acks wait up to timeout for a replica,
	// on a client that reads for longer than that
	serve := func(timeout time.Duration) (*Server, *syncBuffer) {
		var logs syncBuffer
		cfg := Config{Config: qcfg, Queues: map[string]int{q: 1}, Concurrency: 4}
		cfg.WaitReplicas, cfg.WaitTimeout = 1, timeout
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		wrdb, err := queue.NewRedisClient(clusterURL(cl) + "&read_timeout=" + (timeout + 5*time.Second).String())
		must(t, err)
		t.Cleanup(func() { _ = wrdb.Close() })
		return startServer(t, wrdb, cfg, h), &logs
	}
	ctx := context.Background()
	enqueue := func(n int) {
		for range n {
			_, err := client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In(q))
			must(t, err)
		}
	}
	drained := func() bool {
		qi, err := insp.QueueInfo(ctx, q)
		return err == nil && qi.Pending+qi.Active == 0
	}

	// With every replica up, a wait far longer than any replication lag
	// on a loaded machine: no outcome is reported unconfirmed.
	patient, logs := serve(30 * time.Second)
	enqueue(60)
	waitFor(t, 20*time.Second, "60 tasks done", drained)
	must(t, patient.Shutdown(ctx))
	if strings.Contains(string(logs.Bytes()), "not confirmed") {
		t.Errorf("outcomes reported unconfirmed with every replica up:\n%s", string(logs.Bytes()))
	}

	// With one partition's replica frozen, a short wait runs out.
	_, logs = serve(200 * time.Millisecond)
	replica := cl.ReplicaOf(t, masters[0])
	replica.Pause(t)
	enqueue(30)
	waitFor(t, 20*time.Second, "30 more tasks done with a replica frozen", drained)
	replica.Resume(t)
	if !strings.Contains(string(logs.Bytes()), "not confirmed by replicas") {
		t.Errorf("no warning of unconfirmed outcomes with %s's replica frozen:\n%s", keys.For(prefix, q, 0).T, string(logs.Bytes()))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 90 {
		t.Errorf("%d distinct tasks ran, want 90", len(runs))
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("task %s ran %d times, want once", id, n)
		}
	}
}
