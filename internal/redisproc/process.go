package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	logName      = "redis.log"  // --logfile, in Dir
	outName      = "stdout.log" // stdout and stderr of redis-server, in Dir
	readyTimeout = 10 * time.Second
	exitTimeout  = 10 * time.Second
	tailLines    = 20 // lines per file in LogTail
)

// errExited reports that redis-server exited before answering PING, most
// often because its port was taken.
var errExited = errors.New("redis-server exited before answering PING")

// errClosed is returned by Restart after Close.
var errClosed = errors.New("redisproc: server is closed")

// launch starts redis-server with s.args and waits until it answers PING.
// On error the process is gone.
func (s *Server) launch() error {
	out, err := os.OpenFile(filepath.Join(s.Dir, outName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy after Start
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	if s.closed {
		// Close ran while we were starting; it cannot see this process.
		s.mu.Unlock()
		killGroup(cmd)
		_ = wait(done)
		return errClosed
	}
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	if err := waitReady(s.Addr, cmd.Process.Pid, done); err != nil {
		_ = s.kill()
		return err
	}
	return nil
}

// waitReady polls addr with PING until our process, pid, answers +PONG (a
// server still loading its data answers -LOADING), the process exits, or
// readyTimeout. Another test's server that took the port between the pick
// and our bind also answers PING, so the answer counts only when the
// server's INFO says it is pid; ours then exits (errExited), and Start
// tries a new port.
func waitReady(addr string, pid int, done <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if got, ok := pingPID(addr); ok && got == pid {
			return nil
		}
		select {
		case <-done:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s did not answer PING within %v", addr, readyTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pingPID reports whether addr answers PING with PONG and, if so, the
// process ID its INFO server section gives.
func pingPID(addr string) (pid int, ok bool) {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, false
	}
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		return 0, false
	}
	head, err := r.ReadString('\n') // $<length> of the INFO text
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, true
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return 0, true
	}
	for _, line := range strings.Split(string(info), "\r\n") {
		if v, found := strings.CutPrefix(line, "process_id:"); found {
			pid, _ = strconv.Atoi(v)
			return pid, true
		}
	}
	return 0, true
}

// process returns the current process and its exit channel, or nil if the
// server is not running.
func (s *Server) process() (*exec.Cmd, <-chan struct{}) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil, nil
	}
	select {
	case <-done:
		return nil, nil
	default:
		return cmd, done
	}
}

// signal sends sig to the running process; it is a no-op if none runs.
func (s *Server) signal(sig syscall.Signal) error {
	cmd, _ := s.process()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redisproc: sending %v to redis-server: %w", sig, err)
	}
	return nil
}

// kill sends SIGKILL to the process group of the running server and waits
// for it to exit. It is a no-op if the server is not running.
func (s *Server) kill() error {
	cmd, done := s.process()
	if cmd == nil {
		return nil
	}
	killGroup(cmd)
	return wait(done)
}

// killGroup sends SIGKILL to cmd's process group and to cmd itself.
func killGroup(cmd *exec.Cmd) {
	// The group (pgid == pid, see sysProcAttr) also holds any child the
	// server forked for a rewrite; it exists until the leader is reaped.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// wait waits for done, giving up after exitTimeout.
func wait(done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-time.After(exitTimeout):
		return fmt.Errorf("redisproc: redis-server did not exit within %v", exitTimeout)
	}
}

// LogTail returns the last lines of the server's output and log files in
// Dir, headed by the file names, for error messages. It returns
// "(no server output)" when both are missing or empty, for example after
// Close removed a temporary directory.
func (s *Server) LogTail() string {
	var b strings.Builder
	for _, name := range []string{outName, logName} {
		data, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > tailLines {
			lines = lines[len(lines)-tailLines:]
		}
		fmt.Fprintf(&b, "--- %s (tail) ---\n%s\n", name, strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(no server output)"
	}
	return b.String()
}
