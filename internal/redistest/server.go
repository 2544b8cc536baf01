package redistest

import (
	"errors"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// notFound is the one-line failure when redis-server is missing.
const notFound = "redistest: redis-server not found in PATH; install it with: apt-get install -y redis-server"

// Server is a redis-server process owned by a test.
type Server struct {
	// Addr is "127.0.0.1:<Port>".
	Addr string
	// Port is the TCP port the server listens on; it stays the same across
	// Restart.
	Port int
	// Dir is the server's working directory (data, AOF, logs); it is a
	// t.TempDir() (for a cluster node, a directory inside one) and stays the
	// same across Restart.
	Dir string

	proc *redisproc.Server
}

// Start starts a redis-server on a free loopback port with its own temporary
// directory and waits until it answers PING. The server is killed in
// t.Cleanup, even if the test fails. Persistence is off unless [WithAOF] is
// given. If redis-server is not in PATH, Start fails the test with a
// one-line hint on how to install it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	// TempDir first, so its removal runs after the Close registered below.
	p, err := redisproc.Start(procOptions(t.TempDir(), opts)...)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return wrap(p)
}

// wrap returns the test view of p.
func wrap(p *redisproc.Server) *Server {
	return &Server{Addr: p.Addr, Port: p.Port, Dir: p.Dir, proc: p}
}

// fatal fails t with err from redisproc.Start or StartCluster.
func fatal(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Fatal(notFound)
	}
	t.Fatal(err)
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
	return s.proc.Running()
}

// Kill simulates a crash: it sends SIGKILL and waits for the process to
// exit. Data not yet persisted is lost. It is a no-op if the server is not
// running.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.proc.Kill(); err != nil {
		t.Fatal(err)
	}
}

// KillHoldingPort kills the server as Kill does, then holds its port
// until the test ends: a socket bound to it, not listening, so a dial is
// refused as by a dead server, and a server another test starts cannot
// bind the port and answer instead. The bind has no SO_REUSEADDR, which
// would let redis-server bind beside it; so while the dead server's
// connections linger in TIME_WAIT it fails, and the port goes unheld,
// as after Kill.
func (s *Server) KillHoldingPort(t testing.TB) {
	t.Helper()
	s.Kill(t)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("redistest: a socket to hold %s: %v", s.Addr, err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: s.Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Logf("redistest: %s not held after the kill: %v", s.Addr, err)
	}
}

// Stop shuts the server down gracefully: it sends SIGTERM (and SIGCONT, in
// case it is paused) and waits for it to exit. It is a no-op if the server
// is not running.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.proc.Stop(); err != nil {
		t.Fatal(err)
	}
}

// Restart starts the server again on the same port with the same directory
// and configuration, so data persisted with [WithAOF] survives, and waits
// until it answers PING (which also means it has finished loading its data).
// A server that is still running is stopped gracefully first.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.proc.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Pause freezes the server with SIGSTOP, simulating a hung or very slow
// Redis: connections are still accepted by the kernel but nothing is
// answered. Undo it with [Server.Resume]; Kill and Stop also work on a
// paused server.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.proc.Pause(); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a server frozen by [Server.Pause] with SIGCONT.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.proc.Resume(); err != nil {
		t.Fatal(err)
	}
}
