package redistest

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// logSpy is t with the lines logged through it kept: KillHoldingPort logs
// one when the kernel refused its bind.
type logSpy struct {
	testing.TB
	logs []string
}

func (s *logSpy) Logf(format string, args ...any) {
	s.TB.Helper()
	s.logs = append(s.logs, fmt.Sprintf(format, args...))
	s.TB.Logf(format, args...)
}

// TestKillHoldingPort: after KillHoldingPort a dial to the server's port
// is refused, and, when the port was held, a new redis-server cannot
// bind it. The kernel refuses the hold while the dead server's
// connections linger in TIME_WAIT; the method then logs, and this test
// skips the hold's check.
func TestKillHoldingPort(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	spy := &logSpy{TB: t}
	srv.KillHoldingPort(spy)
	if srv.Running() {
		t.Fatal("Running() = true after KillHoldingPort")
	}
	c, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a dial to %s after KillHoldingPort connected", srv.Addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a dial to %s after KillHoldingPort: %v, want connection refused", srv.Addr, err)
	}
	if len(spy.logs) > 0 {
		t.Skipf("the kernel refused the hold, as it may in TIME_WAIT: %s", strings.Join(spy.logs, "; "))
	}
	// a new redis-server on the same port and directory, as Restart starts
	// one: it exits at once when the bind fails
	err = srv.proc.Restart()
	if err == nil {
		t.Fatalf("a new redis-server bound %s, which KillHoldingPort holds", srv.Addr)
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a new redis-server on the held %s: %v, want a bind refused as in use", srv.Addr, err)
	}
}
