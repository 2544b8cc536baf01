package main

import "syscall"

// dieWithWorker has the kernel kill a handler command when the worker
// dies, even by SIGKILL, when nothing could clean up: its task goes back
// to the queue at the lease's end and runs again, and a handler left
// running would do its work a second time meanwhile. Only the command
// itself is killed; what it started in the background may outlive it.
func dieWithWorker(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
