package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestWorkerOnCluster: the same code on a three-node Redis Cluster: queues
// and partitions spread over the nodes, tasks enqueued, scheduled and
// retried, all processed exactly once by two servers, and the idle
// blocking pop wakes for a task enqueued later.
func TestWorkerOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"hot": 4}}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)

	var mu sync.Mutex
	runs := map[string]int{}
	flaky := map[string]bool{}
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		runs[task.ID]++
		flaky[task.ID] = string(task.Payload) == "flaky"
		n := runs[task.ID]
		mu.Unlock()
		if string(task.Payload) == "flaky" && n == 1 {
			return RetryIn(50*time.Millisecond, fmt.Errorf("first try fails"))
		}
		return nil
	})
	for range 2 {
		cfg := Config{Config: qcfg, Queues: map[string]int{"hot": 2, "a": 1, "b": 1}, ForwardInterval: 50 * time.Millisecond}
		cfg.Logger = testLogger(t)
		s, err := NewServer(rdb, cfg, h)
		must(t, err)
		must(t, s.Start(ctx))
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	}
	var tasks []*queue.Task
	for i := range 300 {
		q := []string{"hot", "a", "b"}[i%3]
		payload := "ok"
		if i%50 == 0 {
			payload = "flaky"
		}
		tasks = append(tasks, queue.NewRawTask("t", []byte(payload), queue.In(q)))
	}
	_, err = client.EnqueueMany(ctx, tasks)
	must(t, err)
	_, err = client.Enqueue(ctx, queue.NewRawTask("t", []byte("ok")), queue.In("a"), queue.ProcessIn(200*time.Millisecond))
	must(t, err)
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs)
	}
	waitFor(t, 20*time.Second, "every task", func() bool { return total() == 301 })
	time.Sleep(1500 * time.Millisecond) // the fetchers now block in their slices
	sent := time.Now()
	late, err := client.Enqueue(ctx, queue.NewRawTask("t", []byte("ok")), queue.In("b"))
	must(t, err)
	waitFor(t, 3*time.Second, "the late task", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs[late.ID] == 1
	})
	if d := time.Since(sent); d > 500*time.Millisecond {
		t.Fatalf("an idle worker on the cluster started a task after %v", d)
	}
	mu.Lock()
	for id, n := range runs {
		if want := map[bool]int{true: 2, false: 1}[flaky[id]]; n != want {
			t.Errorf("task %s (flaky %v) ran %d times, want %d", id, flaky[id], n, want)
		}
	}
	mu.Unlock()
	for _, q := range []string{"hot", "a", "b"} {
		waitFor(t, 5*time.Second, "queue "+q+" empty", func() bool {
			qi, err := insp.QueueInfo(ctx, q)
			return err == nil && qi.Pending+qi.Active+qi.Retry+qi.Scheduled == 0 && qi.Dead == 0
		})
	}
}
