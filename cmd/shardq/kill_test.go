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
	srv := redistest.Start(t)
	dir := t.TempDir()
	enqueueAll(t, srv, nil, nil, "slow")
	cmd := exec.Command(os.Args[0], "worker", "--redis", "redis://"+srv.Addr,
		"--handler", `slow=exec:sh -c 'echo $$ > "$0/pid"; exec sleep 60' `+dir)
	cmd.Env = append(os.Environ(), "SHARDQ_TEST_MAIN=1")
	cmd.Stderr = &syncBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var pid int
	waitUntil(t, 20*time.Second, "the handler's command to start", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	if !alive(pid) {
		t.Fatalf("the command (pid %d) is not running", pid)
	}
	t.Cleanup(func() { // if the test fails: only our sleep, never a reused PID
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); alive(pid) && strings.HasPrefix(string(b), "sleep\x0060") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	waitUntil(t, 5*time.Second, "the command to die with its worker", func() bool { return !alive(pid) })
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

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// TestSecondSignalStopsAtOnce: the first SIGTERM starts a graceful stop
// that waits for the running command (up to --shutdown-timeout, here a
// minute); a second SIGTERM ends the worker at once.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	enqueueAll(t, srv, nil, nil, "slow")
	cmd := exec.Command(os.Args[0], "worker", "--redis", "redis://"+srv.Addr, "--shutdown-timeout", "1m",
		"--handler", `slow=exec:sh -c 'echo $$ > "$0/pid"; exec sleep 60' `+dir)
	cmd.Env = append(os.Environ(), "SHARDQ_TEST_MAIN=1")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitUntil(t, 20*time.Second, "the handler's command to start", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	})
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	waitUntil(t, 10*time.Second, "the graceful stop to begin", func() bool {
		return strings.Contains(logs.String(), "shutting down")
	})
	select {
	case err := <-done:
		t.Fatalf("the worker stopped (%v) without waiting for its running command", err)
	case <-time.After(300 * time.Millisecond):
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
			t.Fatalf("after a second SIGTERM: %v, want death by the signal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a second SIGTERM did not stop the worker\nstderr:\n%s", logs.String())
	}
}
