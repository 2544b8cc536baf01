package worker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

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
	if err != nil {
		t.Fatal(err)
	}
	insp, err := queue.NewInspector(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{srv: srv, rdb: rdb, client: client, insp: insp, qcfg: qcfg}
}

// server starts a worker server on the bundle's Redis and shuts it down at
// the end of the test.
func (b *bundle) server(t *testing.T, cfg Config, h Handler) *Server {
	t.Helper()
	return startServer(t, b.rdb, b.config(t, cfg), h)
}

// startServer starts a worker server on rdb and shuts it down (within
// 10 s) at the end of the test.
func startServer(t *testing.T, rdb redis.UniversalClient, cfg Config, h Handler) *Server {
	t.Helper()
	s, err := NewServer(rdb, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func (b *bundle) enqueue(t *testing.T, task *queue.Task, opts ...queue.Option) *queue.TaskInfo {
	t.Helper()
	info, err := b.client.Enqueue(context.Background(), task, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLogger writes to the test log when -v, else nowhere.
func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// recorder is a handler that records what it ran.
type recorder struct {
	mu    sync.Mutex
	runs  map[string]int
	tasks []*Task
	fn    func(ctx context.Context, t *Task) error
}

func newRecorder(fn func(ctx context.Context, t *Task) error) *recorder {
	return &recorder{runs: map[string]int{}, fn: fn}
}

func (r *recorder) ProcessTask(ctx context.Context, t *Task) error {
	r.mu.Lock()
	r.runs[t.ID]++
	r.tasks = append(r.tasks, t)
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, t)
	}
	return nil
}

func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tasks)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// config fills cfg with the bundle's key config and a test logger.
func (b *bundle) config(t *testing.T, cfg Config) Config {
	logger := cfg.Logger
	cfg.Config = b.qcfg
	cfg.Logger = logger
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	return cfg
}
