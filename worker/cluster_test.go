package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
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
	moves := &moveHook{inFlight: map[string]int{}}
	rdb.AddHook(moves)
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
	// A task pushed while b's fetchers block in a slice is taken by the
	// blocking move itself, not by a later poll. The push can land just
	// as a slice ends, when the next pop takes it: then try again.
	shards := keys.For(qcfg.Prefix, "b", 0).ShardPrefix()
	for try := 1; ; try++ {
		waitFor(t, 10*time.Second, "a fetcher of b blocked in its slice", func() bool { return moves.blocking(shards) })
		late, err := client.Enqueue(ctx, queue.NewRawTask("t", []byte("ok")), queue.In("b"))
		must(t, err)
		waitFor(t, 20*time.Second, "the late task", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return runs[late.ID] == 1
		})
		if moves.took(wire.StoredID(late.ID)) {
			break
		}
		if try == 5 {
			t.Fatal("in 5 tries, no blocked fetcher took a task pushed while it blocked")
		}
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

// moveHook watches the blocking moves (BLMOVE) that idle fetchers send in
// their slices: which shards they block on now, and what they took.
type moveHook struct {
	mu       sync.Mutex
	inFlight map[string]int // source shard -> moves waiting there
	moved    []string       // the items the moves returned
}

func (h *moveHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *moveHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *moveHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var moves []redis.Cmder
		h.mu.Lock()
		for _, c := range cmds {
			if strings.EqualFold(c.Name(), "blmove") {
				moves = append(moves, c)
				h.inFlight[fmt.Sprint(c.Args()[1])]++
			}
		}
		h.mu.Unlock()
		err := next(ctx, cmds)
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range moves {
			h.inFlight[fmt.Sprint(c.Args()[1])]--
			if sc, ok := c.(*redis.StringCmd); ok && sc.Val() != "" {
				h.moved = append(h.moved, sc.Val())
			}
		}
		return err
	}
}

// blocking reports whether a move waits on a shard whose key starts with prefix.
func (h *moveHook) blocking(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, n := range h.inFlight {
		if n > 0 && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// took reports whether a move returned the message of the task with the
// stored ID id.
func (h *moveHook) took(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.moved {
		if strings.Contains(m, id) {
			return true
		}
	}
	return false
}
