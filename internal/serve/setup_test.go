package serve

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/outbox"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// The engine's own tests drive its steps one by one; the tests of a whole
// worker, with its handlers, schedules and crash safety, are package
// worker's.

// The causes a test engine cancels with, standing for worker's sentinels.
var (
	errShutdown  = errors.New("test: shutting down")
	errCancelled = errors.New("test: cancelled by an operator")
	errLeaseLost = errors.New("test: lease lost")
	errDead      = errors.New("test: skip retry")
)

// engines numbers the test engines, for their worker IDs.
var engines atomic.Int64

type bundle struct {
	srv    *redistest.Server
	rdb    *redis.Client
	client *queue.Client
	insp   *queue.Inspector
	qcfg   queue.Config
}

func setup(t *testing.T, opts ...redistest.Option) *bundle {
	t.Helper()
	srv := redistest.Start(t, opts...)
	rdb := srv.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	return &bundle{srv: srv, rdb: rdb, client: client, insp: insp, qcfg: qcfg}
}

// config returns c on the bundle's prefix, with the defaults
// worker.NewServer would fill in and handle as its handler.
func (b *bundle) config(t testing.TB, c Config, handle func(context.Context, *Job, Fields) Verdict) Config {
	qc, err := config.Normalize(b.qcfg)
	must(t, err)
	c.Config = qc.(queue.Config)
	if len(c.Queues) == 0 && len(c.QueuePatterns) == 0 {
		c.Queues = map[string]int{queue.DefaultQueue: 1}
	}
	c.QueueRefresh = cmp.Or(c.QueueRefresh, 2*time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 10)
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.Heartbeat = cmp.Or(c.Heartbeat, c.Lease/3)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 10*time.Second)
	c.ForwardInterval = cmp.Or(c.ForwardInterval, 500*time.Millisecond)
	c.WorkflowSweep = cmp.Or(c.WorkflowSweep, time.Second)
	c.FetchSize = cmp.Or(c.FetchSize, min(c.Concurrency, 100))
	c.Prefetch = cmp.Or(c.Prefetch, 300)
	c.SucceededSize = cmp.Or(c.SucceededSize, 10_000)
	c.DeadSize = cmp.Or(c.DeadSize, 10_000)
	c.WorkerID = cmp.Or(c.WorkerID, fmt.Sprintf("test-%d-%d", os.Getpid(), engines.Add(1)))
	if c.Log == nil {
		c.Log = testLogger()
	}
	c.Handle = handle
	c.Causes = Causes{Shutdown: errShutdown, Cancelled: errCancelled, LeaseLost: errLeaseLost,
		Dead: func(err error) error { return fmt.Errorf("%w: %w", errDead, err) }}
	return c
}

// unstarted returns an engine for queue "q" that was never started, with
// what its fetchers and handlers need set up, so a test drives its steps
// one by one.
func unstarted(t *testing.T, b *bundle, handle func(context.Context, *Job, Fields) Verdict) (*Engine, *part) {
	t.Helper()
	s := New(b.rdb, b.config(t, Config{Queues: map[string]int{"q": 1}}, handle))
	s.outbox = outbox.New[outcome]()
	s.flows = s.newFlows()
	s.handlerCtx, s.cancelTasks = context.WithCancelCause(context.Background())
	return s, s.parts[0]
}

// succeed is a Handle whose every job succeeds.
func succeed(context.Context, *Job, Fields) Verdict { return Verdict{} }

// popN pops n tasks of p and fails the test unless it gets all n.
func popN(t *testing.T, s *Engine, p *part, n int) []leased {
	t.Helper()
	r, err := s.dequeue(context.Background(), p, n, 0, false)
	if err != nil || len(r.tasks) != n {
		t.Fatalf("pop: %d tasks of %d, err %v", len(r.tasks), n, err)
	}
	return r.tasks
}

// testLogger writes to stderr when -v, else nowhere.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// enqueueN enqueues n raw tasks of type "t".
func enqueueN(t *testing.T, b *bundle, n int, opts ...queue.Option) {
	t.Helper()
	tasks := make([]*queue.Task, n)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("t", []byte(fmt.Sprint(i)))
	}
	if _, err := b.client.EnqueueMany(context.Background(), tasks, opts...); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes, for logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

func (b *bundle) enqueue(t *testing.T, task *queue.Task, opts ...queue.Option) *queue.TaskInfo {
	t.Helper()
	info, err := b.client.Enqueue(context.Background(), task, opts...)
	must(t, err)
	return info
}

// newJob decodes leased task l of partition p into a new Job.
func (s *Engine) newJob(p *part, l leased) (*Job, error) {
	j := new(Job)
	if _, err := s.decode(j, p, l); err != nil {
		return nil, err
	}
	return j, nil
}
