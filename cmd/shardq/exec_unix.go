//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup runs cmd in a process group of its own: a Ctrl-C at the
// terminal reaches the worker only, which then shuts down gracefully
// instead of every command dying at once, and cancelling kills the
// command with every process it started.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithWorker(cmd.SysProcAttr)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
