package redisproc

import "syscall"

// sysProcAttr puts redis-server in its own process group (so Kill also
// reaches any child it forked) and kills it if the parent process dies.
//
// Pdeathsig fires when the OS thread that started the process exits; the Go
// runtime only retires threads of goroutines that exit while locked to their
// thread (runtime.LockOSThread), so Start and Restart must not be called from
// such a goroutine (see the package documentation).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
