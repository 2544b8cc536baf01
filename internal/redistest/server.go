package redistest

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// notFound is the one-line failure when redis-server is missing.
const notFound = "redistest: redis-server not found in PATH; install it with: apt-get install -y redis-server"

// startAttempts bounds the retries with a new port when redis-server exits
// before answering, most often because another process took the port.
const startAttempts = 5

// Server is a redis-server process owned by a test.
type Server struct {
	// Addr is "127.0.0.1:<Port>".
	Addr string
	// Port is the TCP port the server listens on; it stays the same across
	// Restart.
	Port int
	// Dir is the server's working directory (data, AOF, logs); it is a
	// t.TempDir() and stays the same across Restart.
	Dir string

	busPort int      // cluster bus port, 0 outside a cluster
	bin     string   // path of redis-server
	args    []string // command line, reused by Restart

	mu   sync.Mutex
	cmd  *exec.Cmd     // the current process
	done chan struct{} // closed when cmd has exited
}

// Start starts a redis-server on a free loopback port with its own temporary
// directory and waits until it answers PING. The server is killed in
// t.Cleanup, even if the test fails. Persistence is off unless [WithAOF] is
// given. If redis-server is not in PATH, Start fails the test with a
// one-line hint on how to install it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(notFound)
	}
	cfg := newConfig(opts)
	s := &Server{Dir: t.TempDir(), bin: bin}
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(func() { _ = s.kill() })

	for attempt := 1; ; attempt++ {
		if err = s.pickPorts(cfg.cluster); err != nil {
			t.Fatal(err)
		}
		s.args = cfg.args(s.Dir, s.Port, s.busPort)
		err = s.launch()
		if err == nil {
			return s
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			t.Fatalf("redistest: starting redis-server on %s: %v\n%s", s.Addr, err, s.logTail())
		}
	}
}

// pickPorts chooses free ports for the server and, in cluster mode, for its
// cluster bus.
func (s *Server) pickPorts(cluster bool) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port, s.busPort = port, 0
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if cluster {
		for s.busPort == 0 || s.busPort == s.Port {
			if s.busPort, err = freePort(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Options returns options for a go-redis client to the server.
func (s *Server) Options() *redis.Options {
	return &redis.Options{Addr: s.Addr}
}

// Client returns a new go-redis client to the server, closed in t.Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the server process is alive (paused counts as
// alive).
func (s *Server) Running() bool {
	cmd, _ := s.process()
	return cmd != nil
}

// Kill simulates a crash: it sends SIGKILL and waits for the process to
// exit. Data not yet persisted is lost. It is a no-op if the server is not
// running.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.kill(); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts the server down gracefully: it sends SIGTERM (and SIGCONT, in
// case it is paused) and waits for it to exit. It is a no-op if the server
// is not running.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	_, done := s.process()
	if done == nil {
		return
	}
	if err := s.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := wait(done); err != nil {
		_ = s.kill()
		t.Fatal(err)
	}
}

// Restart starts the server again on the same port with the same directory
// and configuration, so data persisted with [WithAOF] survives, and waits
// until it answers PING (which also means it has finished loading its data).
// A server that is still running is stopped gracefully first.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = s.launch(); err == nil || !errors.Is(err, errExited) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port may be briefly taken
	}
	if err != nil {
		t.Fatalf("redistest: restarting redis-server on %s: %v\n%s", s.Addr, err, s.logTail())
	}
}

// Pause freezes the server with SIGSTOP, simulating a hung or very slow
// Redis: connections are still accepted by the kernel but nothing is
// answered. Undo it with [Server.Resume]; Kill and Stop also work on a
// paused server.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a server frozen by [Server.Pause] with SIGCONT.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
