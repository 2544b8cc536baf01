package queue_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// ibundle is what the Inspector tests need: a Redis of their own, a
// client, an inspector, and a hook counting what they send.
type ibundle struct {
	srv    *redistest.Server
	rdb    *redis.Client
	client *queue.Client
	insp   *queue.Inspector
	cfg    queue.Config
	calls  *callCounter
	ctx    context.Context
}

func isetup(t *testing.T, cfg queue.Config) *ibundle {
	t.Helper()
	srv := redistest.Start(t)
	// a client that never resends a call whose reply was lost: on a loaded
	// machine a large EnqueueMany can outlast the read timeout, and a
	// resent one enqueues twice (as queue.NewRedisClient sets it)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	calls := &callCounter{}
	rdb.AddHook(calls)
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &ibundle{srv: srv, rdb: rdb, client: client, insp: insp, cfg: cfg, calls: calls, ctx: context.Background()}
}

// enqueue enqueues n raw tasks of typ and returns their IDs in order.
func (b *ibundle) enqueue(t testing.TB, n int, typ string, opts ...queue.Option) []string {
	t.Helper()
	tasks := make([]*queue.Task, n)
	for j := range tasks {
		tasks[j] = queue.NewRawTask(typ, []byte(typ))
	}
	infos, err := b.client.EnqueueMany(b.ctx, tasks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for j, in := range infos {
		ids[j] = in.ID
	}
	return ids
}

// Task types the test worker knows: what each does to its task.
const (
	typeDie   = "die"   // fails for good: dead
	typeRetry = "retry" // fails, retried in an hour: retry
	typeBlock = "block" // runs until the test ends: active
	typeOK    = "ok"    // succeeds: done when enqueued with Retention
	typeFail  = "fail"  // fails: retried or dead by MaxRetry
)

// testWorker runs the test task types on queues until the test ends.
type testWorker struct {
	srv     *worker.Server
	release chan struct{}
	fails   atomic.Int64 // attempts of typeFail tasks
}

func (b *ibundle) worker(t *testing.T, queues ...string) *testWorker {
	t.Helper()
	w := &testWorker{release: make(chan struct{})}
	mux := worker.NewMux()
	mux.HandleFunc(typeDie, func(ctx context.Context, _ *worker.Task) error {
		return worker.SkipRetry(errors.New("died <b>on purpose</b>"))
	})
	mux.HandleFunc(typeRetry, func(ctx context.Context, _ *worker.Task) error {
		return worker.RetryIn(time.Hour, errors.New("try later"))
	})
	mux.HandleFunc(typeBlock, func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-w.release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	mux.HandleFunc(typeOK, func(ctx context.Context, _ *worker.Task) error { return nil })
	mux.HandleFunc(typeFail, func(ctx context.Context, _ *worker.Task) error { w.fails.Add(1); return errors.New("failed") })
	qs := map[string]int{}
	for _, q := range queues {
		qs[q] = 1
	}
	// a client of its own, so the worker's calls are not counted
	srv, err := worker.NewServer(b.srv.Client(t), worker.Config{Config: b.cfg, Queues: qs, Concurrency: 50,
		WorkerID:   "w-" + strings.ReplaceAll(t.Name(), "/", "-"),
		RetryDelay: func(int, error, *worker.Task) time.Duration { return time.Hour }}, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.srv = srv
	t.Cleanup(func() {
		close(w.release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return w
}

// waitCounts polls QueueInfo until cond holds.
func (b *ibundle) waitCounts(t *testing.T, q string, what string, cond func(*queue.QueueInfo) bool) *queue.QueueInfo {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		qi, err := b.insp.QueueInfo(b.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if cond(qi) {
			return qi
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, qi)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listAll pages q to its end (q.Limit must be set) and returns every task.
func (b *ibundle) listAll(t *testing.T, q queue.TaskQuery) []*queue.TaskInfo {
	t.Helper()
	var out []*queue.TaskInfo
	for range 10_000 {
		p, err := b.insp.ListTasks(b.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Tasks...)
		if len(p.Tasks) < q.Limit {
			return out
		}
		q.After = p.Next
	}
	t.Fatal("listing never ended")
	return nil
}

func ids(tasks []*queue.TaskInfo) []string {
	out := make([]string, len(tasks))
	for j, ti := range tasks {
		out[j] = ti.ID
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// callCounter counts round trips and commands sent, connection set-up aside.
type callCounter struct {
	roundTrips atomic.Int64
	commands   atomic.Int64
}

func (h *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.roundTrips.Add(1)
			h.commands.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			h.roundTrips.Add(1)
			h.commands.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// handshake reports whether cmd is part of a new connection's set-up,
// which is no cost of the call being measured.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

func (h *callCounter) reset() { h.roundTrips.Store(0); h.commands.Store(0) }

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func redisZ(at time.Time, member string) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: member}
}

func parseInt(s string) (int, error) { return strconv.Atoi(s) }
