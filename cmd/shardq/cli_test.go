package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// syncBuffer is a bytes.Buffer safe for a command's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is shardq running in-process in the background, until stop.
type proc struct {
	cancel      context.CancelFunc
	done        chan int
	stdout, err *syncBuffer
}

// startShardq runs shardq with args in a goroutine; stop cancels its
// context (as SIGINT does) and returns the exit code.
func startShardq(t *testing.T, env map[string]string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan int, 1), stdout: &syncBuffer{}, err: &syncBuffer{}}
	m := &Main{Stdout: p.stdout, Stderr: p.err, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- m.Run(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
		}
	})
	return p
}

func (p *proc) stop(t *testing.T) int {
	t.Helper()
	p.cancel()
	select {
	case code := <-p.done:
		p.done <- code // for Cleanup
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("shardq did not stop within 30s\nstderr:\n%s", p.err.String())
		return -1
	}
}

// redisEnv returns the environment pointing shardq at srv.
func redisEnv(srv *redistest.Server) map[string]string {
	return map[string]string{"REDIS_URL": "redis://" + srv.Addr}
}

// downEnv points shardq at a port nothing listens on: port 1, privileged
// and outside the range free ports come from. (A port found free and
// closed again could be handed to a parallel test's redis-server.)
func downEnv(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{"SHARDQ_REDIS_URL": "redis://127.0.0.1:1"}
}

func inspector(t *testing.T, srv *redistest.Server) *queue.Inspector {
	t.Helper()
	insp, err := queue.NewInspector(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return insp
}

// waitState polls until task id of q is in state, and returns its info.
func waitState(t *testing.T, insp *queue.Inspector, q, id string, state queue.State) *queue.TaskInfo {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last *queue.TaskInfo
	for time.Now().Before(deadline) {
		ti, err := insp.GetTask(context.Background(), q, id)
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("GetTask(%s): %v", id, err)
		}
		if ti != nil && ti.State == state {
			return ti
		}
		last = ti
		time.Sleep(20 * time.Millisecond)
	}
	if last == nil {
		t.Fatalf("task %s: not found, want state %s", id, state)
	}
	t.Fatalf("task %s: state %s (last error %q), want %s", id, last.State, last.LastError, state)
	return nil
}

// writeFile writes a file in a test directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// badInput is one case of a command given bad input: the exit code and a
// piece of what it must say on stderr.
type badInput struct {
	name string
	env  map[string]string
	args []string
	code int
	want string
}

// runBadInput runs command with each case's arguments, in parallel. A
// command that fails writes nothing to stdout, so scripts reading it never
// take an error for output.
func runBadInput(t *testing.T, command string, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, c.env, append([]string{command}, c.args...)...)
			said := errOut
			if code == exitOK {
				said = out // help goes to stdout
			}
			if code != c.code || !strings.Contains(said, c.want) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s", code, c.code, c.want, said)
			}
			if code != exitOK && out != "" {
				t.Fatalf("exit %d with output on stdout: %q", code, out)
			}
			if code == exitUsage && (strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "run 'shardq help "+command+"'")) {
				t.Fatalf("a usage error is one line naming the help command, got:\n%s", errOut)
			}
		})
	}
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}
