package upgrade_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// oldWorker is a running 0.1.0 worker process (workerSource).
type oldWorker struct {
	cmd    *exec.Cmd
	id     string // its worker ID, as it printed it
	stderr lockedBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error, set before exited closes
}

// startOldWorker starts bin serving q on addr, appending its runs to runs,
// and returns once it printed that it fetches. The process is killed when
// ctx ends, and at the test's end if it still runs.
func startOldWorker(ctx context.Context, t *testing.T, bin, addr, q, runs string) *oldWorker {
	t.Helper()
	w := &oldWorker{exited: make(chan struct{})}
	w.cmd = exec.CommandContext(ctx, bin, addr, q, runs)
	w.cmd.Stderr = &w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- id
			}
		}
		// the pipe must be drained before Wait
		_, _ = io.Copy(io.Discard, out)
		w.err = w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
		if s := w.stderr.String(); s != "" {
			t.Logf("0.1.0 worker %s (pid %d) wrote:\n%s", w.id, w.cmd.Process.Pid, s)
		}
	})
	select {
	case w.id = <-ready:
		return w
	case <-w.exited:
		t.Fatalf("the 0.1.0 worker exited before it was ready: %v\n%s", w.err, w.stderr.String())
	case <-ctx.Done():
		t.Fatalf("the 0.1.0 worker did not get ready: %v\n%s", ctx.Err(), w.stderr.String())
	}
	return nil
}

// pid is the worker's process ID.
func (w *oldWorker) pid() int { return w.cmd.Process.Pid }

// stop sends sig and waits for the process to exit, until ctx ends.
func (w *oldWorker) stop(ctx context.Context, t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to the 0.1.0 worker: %v", sig, err)
	}
	select {
	case <-w.exited:
		return w.err
	case <-ctx.Done():
		t.Fatalf("the 0.1.0 worker %s did not exit after %v: %v", w.id, sig, ctx.Err())
		return nil
	}
}

// feeder is a running 0.1.0 producer (feederSource) and what it enqueued.
type feeder struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   lockedBuffer
	mu       sync.Mutex
	enqueued []string // payloads, in order
	exited   chan struct{}
	err      error
}

// startFeeder starts bin enqueueing count tasks of phase into q on addr,
// or a stream until stopped with count 0.
func startFeeder(ctx context.Context, t *testing.T, bin, addr, q, phase string, count int) *feeder {
	t.Helper()
	f := &feeder{exited: make(chan struct{})}
	f.cmd = exec.CommandContext(ctx, bin, addr, q, phase, fmt.Sprint(count))
	f.cmd.Stderr = &f.stderr
	var err error
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "enqueued "); ok {
				f.mu.Lock()
				f.enqueued = append(f.enqueued, p)
				f.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, out)
		f.err = f.cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-f.exited:
		default:
			_ = f.cmd.Process.Kill()
			<-f.exited
		}
	})
	return f
}

// sent returns the payloads enqueued so far.
func (f *feeder) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.enqueued...)
}

// finish ends a stream, waits for the feeder to exit and returns every
// payload it enqueued.
func (f *feeder) finish(ctx context.Context, t *testing.T) []string {
	t.Helper()
	_ = f.stdin.Close()
	select {
	case <-f.exited:
	case <-ctx.Done():
		t.Fatalf("the 0.1.0 feeder did not exit: %v", ctx.Err())
	}
	if f.err != nil {
		t.Fatalf("the 0.1.0 feeder: %v\n%s", f.err, f.stderr.String())
	}
	return f.sent()
}

// lockedBuffer is a bytes.Buffer that a process's output copier and the
// test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
