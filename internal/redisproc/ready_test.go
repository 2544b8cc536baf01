package redisproc

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestWaitReadyIsOursOnly: a server of another test that took the port
// between the pick and our bind answers PING too; waitReady counts only an
// answer from our own process, and reports our process's exit (errExited,
// so Start tries a new port). CI once met the other case: a cluster test
// talked to a plain server that had the port, and failed ("cluster support
// disabled").
func TestWaitReadyIsOursOnly(t *testing.T) {
	t.Parallel()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cmd, _ := s.process()
	if err := waitReady(s.Addr, cmd.Process.Pid, nil); err != nil {
		t.Fatalf("waitReady for the server's own process: %v", err)
	}
	exited := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() { close(exited) })
	// errExited comes only once exited is closed: the other server's PONG
	// did not count
	if err := waitReady(s.Addr, os.Getpid(), exited); !errors.Is(err, errExited) {
		t.Fatalf("waitReady for another process on the same port = %v, want errExited", err)
	}
}
