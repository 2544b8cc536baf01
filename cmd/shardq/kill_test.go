package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
)

// TestMain lets a test run this binary as the real shardq: with
// SHARDQ_TEST_MAIN=1 the test binary is shardq, for tests that kill it.
func TestMain(m *testing.M) {
	if os.Getenv("SHARDQ_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestKilledWorkerTakesItsCommandDown kills a worker process with SIGKILL
// while an exec handler runs: the kernel kills the command too, so it does
// not go on with the task that another worker will run again once the
// lease expires.
func TestKilledWorkerTakesItsCommandDown(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a parent-death signal is Linux's")
	}
	t.Parallel()
	w := startWorkerProcess(t)
	if !alive(w.pid) {
		t.Fatalf("the command (pid %d) is not running", w.pid)
	}
	must(t, w.cmd.Process.Signal(syscall.SIGKILL))
	<-w.done
	waitUntil(t, 5*time.Second, "the command to die with its worker", func() bool { return !alive(w.pid) })
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// the state follows the parenthesised command name
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// TestSecondSignalStopsAtOnce: the first SIGTERM starts a graceful stop
// that waits for the running command (up to --shutdown-timeout, here a
// minute); a second SIGTERM ends the worker at once.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	w := startWorkerProcess(t, "--shutdown-timeout", "1m")
	must(t, w.cmd.Process.Signal(syscall.SIGTERM))
	waitUntil(t, 10*time.Second, "the graceful stop to begin", func() bool {
		return strings.Contains(w.logs.String(), "shutting down")
	})
	select {
	case err := <-w.done:
		t.Fatalf("the worker stopped (%v) without waiting for its running command", err)
	case <-time.After(300 * time.Millisecond):
	}
	must(t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-w.done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
			t.Fatalf("after a second SIGTERM: %v, want death by the signal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a second SIGTERM did not stop the worker\nstderr:\n%s", w.logs.String())
	}
}

// workerProcess is shardq worker running as a process of its own, with one
// task whose command (sleep 60) has started.
type workerProcess struct {
	cmd  *exec.Cmd
	done chan error // the process's exit, once
	logs *syncBuffer
	pid  int // the running command's
}

// startWorkerProcess runs this test binary as shardq worker with args, on
// a Redis of its own holding one "slow" task, and returns once the task's
// command runs. Cleanup kills both, the command only if it is still ours.
func startWorkerProcess(t *testing.T, args ...string) *workerProcess {
	t.Helper()
	srv := redistest.Start(t)
	dir := t.TempDir()
	enqueueAll(t, srv, nil, nil, "slow")
	cmd := exec.Command(os.Args[0], append([]string{"worker", "--redis", "redis://" + srv.Addr,
		"--handler", `slow=exec:sh -c 'echo $$ > "$0/pid"; exec sleep 60' ` + dir}, args...)...)
	cmd.Env = append(os.Environ(), "SHARDQ_TEST_MAIN=1")
	w := &workerProcess{cmd: cmd, done: make(chan error, 1), logs: &syncBuffer{}}
	cmd.Stderr = w.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitUntil(t, 20*time.Second, "the handler's command to start", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		w.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && w.pid > 0
	})
	t.Cleanup(func() { // never a reused PID: only our sleep
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(w.pid) + "/cmdline"); alive(w.pid) && strings.HasPrefix(string(b), "sleep\x0060") {
			_ = syscall.Kill(w.pid, syscall.SIGKILL)
		}
	})
	return w
}
