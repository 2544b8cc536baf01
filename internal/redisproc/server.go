package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled is returned by [Start] and [StartCluster] when
// redis-server is not in PATH. Its text is a one-line hint on how to install
// it.
var ErrNotInstalled = errors.New("redisproc: redis-server not found in PATH; install it with: apt-get install -y redis-server")

// startAttempts bounds the retries with a new port when redis-server exits
// before answering, most often because another process took the port.
const startAttempts = 5

// Server is a redis-server process started by [Start]. Its methods are safe
// for concurrent use. Call [Server.Close] when done with it.
type Server struct {
	// Addr is "127.0.0.1:<Port>".
	Addr string
	// Port is the TCP port the server listens on; it stays the same across
	// Restart.
	Port int
	// Dir is the server's working directory (data, AOF, logs), an absolute
	// path; it stays the same across Restart.
	Dir string

	busPort int      // cluster bus port, 0 outside a cluster
	bin     string   // path of redis-server
	args    []string // command line, reused by Restart
	tempDir bool     // Dir was created by Start; Close removes it

	mu     sync.Mutex
	cmd    *exec.Cmd     // the current process
	done   chan struct{} // closed when cmd has exited
	closed bool          // Close has been called
}

// Start launches redis-server on a free loopback port (bound to 127.0.0.1
// only) and waits until it answers PING. Persistence is off unless [WithAOF]
// is given. The server runs in a fresh temporary directory that
// [Server.Close] removes, or in the directory given with [WithDir].
//
// If redis-server is not in PATH, the error is [ErrNotInstalled]. Other
// errors end with the tail of the server's output and log. On error nothing
// is left running and a temporary directory is removed.
func Start(opts ...Option) (*Server, error) {
	cfg := newConfig(opts)
	return start(cfg, cfg.dir)
}

// start starts one server with cfg in dir ("" for a temporary directory).
func start(cfg *config, dir string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	s := &Server{bin: bin, tempDir: dir == ""}
	if s.tempDir {
		if dir, err = os.MkdirTemp("", "redisproc-"); err != nil {
			return nil, fmt.Errorf("redisproc: creating a temporary directory: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redisproc: creating directory: %w", err)
	}
	// redis-server runs in Dir and also gets it as --dir, so a relative path
	// would be resolved twice.
	if s.Dir, err = filepath.Abs(dir); err != nil {
		if s.tempDir {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("redisproc: directory %q: %w", dir, err)
	}

	if cfg.sentinelConf != "" {
		if err := os.WriteFile(filepath.Join(s.Dir, sentinelFile), []byte(cfg.sentinelConf), 0o644); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("redisproc: writing the Sentinel's config: %w", err)
		}
	}
	for attempt := 1; ; attempt++ {
		if err = s.pickPorts(cfg.cluster); err != nil {
			break
		}
		s.args = cfg.args(s.Dir, s.Port, s.busPort)
		if err = s.launch(); err == nil {
			return s, nil
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			err = fmt.Errorf("redisproc: starting redis-server on %s: %w\n%s", s.Addr, err, s.LogTail())
			break
		}
	}
	_ = s.Close()
	return nil, err
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

// URL returns the server's address as a redis URL for database 0,
// "redis://127.0.0.1:<Port>/0", as accepted by redis.ParseURL.
func (s *Server) URL() string {
	return "redis://" + s.Addr + "/0"
}

// Running reports whether the server process is alive (paused counts as
// alive).
func (s *Server) Running() bool {
	cmd, _ := s.process()
	return cmd != nil
}

// Kill simulates a crash: it sends SIGKILL to the server (and any child it
// forked) and waits for it to exit. Data not yet persisted is lost. It is a
// no-op if the server is not running.
func (s *Server) Kill() error {
	return s.kill()
}

// Stop shuts the server down gracefully: it sends SIGTERM (and SIGCONT, in
// case it is paused) and waits for it to exit. If it has not exited after
// 10 seconds, Stop kills it and returns an error. It is a no-op if the
// server is not running.
func (s *Server) Stop() error {
	_, done := s.process()
	if done == nil {
		return nil
	}
	if err := s.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := s.signal(syscall.SIGCONT); err != nil {
		return err
	}
	if err := wait(done); err != nil {
		_ = s.kill()
		return err
	}
	return nil
}

// Restart starts the server again on the same port with the same directory
// and configuration, so data persisted with [WithAOF] survives, and waits
// until it answers PING (which also means it has finished loading its data).
// A server that is still running is stopped gracefully first. Restart fails
// after [Server.Close]; its other errors end with the tail of the server's
// output and log.
func (s *Server) Restart() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errClosed
	}
	if err := s.Stop(); err != nil {
		return err
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = s.launch(); err == nil || !errors.Is(err, errExited) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port may be briefly taken
	}
	if err != nil && !errors.Is(err, errClosed) {
		err = fmt.Errorf("redisproc: restarting redis-server on %s: %w\n%s", s.Addr, err, s.LogTail())
	}
	return err
}

// Pause freezes the server with SIGSTOP, simulating a hung or very slow
// Redis: connections are still accepted by the kernel but nothing is
// answered. Undo it with [Server.Resume]; Kill, Stop and Close also work on
// a paused server. It is a no-op if the server is not running.
func (s *Server) Pause() error {
	return s.signal(syscall.SIGSTOP)
}

// Resume continues a server frozen by [Server.Pause] with SIGCONT. It is a
// no-op if the server is not running.
func (s *Server) Resume() error {
	return s.signal(syscall.SIGCONT)
}

// Close kills the server if it is running, waits for it to exit, and removes
// its directory if Start created it (a directory given with [WithDir] is
// kept). Afterwards Restart fails; Kill, Stop, Pause and Resume are no-ops.
// Close is idempotent: calls after the first do nothing and return nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	err := s.kill()
	if s.tempDir {
		if rerr := os.RemoveAll(s.Dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("redisproc: removing %s: %w", s.Dir, rerr))
		}
	}
	return err
}
