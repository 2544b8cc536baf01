package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// rig is a private redis-server with a prefix, a producer and an inspector.
type rig struct {
	rdb    *redis.Client
	prefix string
	client *queue.Client
	insp   *queue.Inspector
	cfg    queue.Config
}

func newRig(t *testing.T) *rig {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	c, err := queue.NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{rdb: rdb, prefix: cfg.Prefix, client: c, insp: insp, cfg: cfg}
}

// part returns the keys of partition 0 of queue q.
func (r *rig) part(q string) keys.Partition { return keys.For(r.prefix, q, 0) }

// enqueue enqueues n plain tasks of type typ into queue "default".
func (r *rig) enqueue(t *testing.T, n int, typ string, opts ...queue.Option) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		info, err := r.client.Enqueue(context.Background(), queue.NewRawTask(typ, []byte(fmt.Sprintf("p%d", i))), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	return ids
}

// counter counts a handler's calls by task ID.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counter) count(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[id]++
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.runs {
		n += v
	}
	return n
}

// serve starts a worker on queues with handler h until the test ends or
// stop is called.
func (r *rig) serve(t *testing.T, h worker.HandlerFunc, queues ...string) (stop func()) {
	t.Helper()
	qs := map[string]int{}
	for _, q := range queues {
		qs[q] = 1
	}
	srv, err := worker.NewServer(r.rdb, worker.Config{
		Config: r.cfg, Queues: qs, Concurrency: 4,
		RetryDelay:      func(int, error, *worker.Task) time.Duration { return 0 },
		ForwardInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
		Heartbeat: 200 * time.Millisecond, QueueRefresh: 200 * time.Millisecond,
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// settled waits until queue q holds nothing pending, active, scheduled or
// retrying.
func (r *rig) settled(t *testing.T, q string, also func() bool) {
	t.Helper()
	var last string
	waitFor(t, 30*time.Second, "queue "+q+" settled", func() bool {
		qi, err := r.insp.QueueInfo(context.Background(), q)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%+v", *qi)
		return qi.Pending+qi.Active+qi.Scheduled+qi.Retry+qi.Waiting == 0 && (also == nil || also())
	}, func() string { return last })
}

// waitFor polls cond until it holds or the limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			for _, s := range state {
				what += ": " + s()
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// audit runs the doctor on r.
func (r *rig) audit(t *testing.T, repair bool) *Report {
	t.Helper()
	rep, err := Run(context.Background(), r.rdb, Options{Prefix: r.prefix, Repair: repair, Examples: 20})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// counts returns the count of each check in rep.
func counts(rep *Report) map[string]int {
	out := map[string]int{}
	for _, f := range rep.Findings {
		if f.Count > 0 {
			out[f.Check] = f.Count
		}
	}
	return out
}

// describe lists rep's findings for a failure message.
func describe(rep *Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		if f.Count > 0 {
			fmt.Fprintf(&b, "\n  %s: %d (repaired %d) %q", f.Check, f.Count, f.Repaired, f.Examples)
		}
	}
	return b.String()
}

// record packs a task record as the scripts do (include/record.lua).
func record(t *testing.T, state string, attempts int, token int64, worker string, startedAt, nextAt int64) string {
	t.Helper()
	b, err := msgpack.Marshal([]any{state, attempts, token, worker, "", int64(0), startedAt, int64(0), nextAt, ""})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// takeHead removes the message at the head of partition k's pending list,
// as a crash between two writes of a script would have left it gone, and
// returns it with its ID.
func takeHead(t *testing.T, rdb *redis.Client, k keys.Partition) (id, msg string) {
	t.Helper()
	ctx := context.Background()
	first, err := rdb.Get(ctx, k.First()).Result()
	if errors.Is(err, redis.Nil) {
		first = "0"
	} else if err != nil {
		t.Fatal(err)
	}
	msg, err = rdb.LPop(ctx, k.ShardPrefix()+first).Result()
	if err != nil {
		t.Fatalf("LPOP the head shard %s: %v", first, err)
	}
	id, ok := wire.HeadID(msg)
	if !ok {
		t.Fatalf("no ID in %q", msg)
	}
	return id, msg
}

// now is the server's time in ms.
func now(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}
