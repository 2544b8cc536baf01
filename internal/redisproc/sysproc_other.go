//go:build !linux

package redisproc

import "syscall"

// sysProcAttr puts redis-server in its own process group, so Kill also
// reaches any child it forked. Parent-death signals are Linux-only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
