//go:build unix && !linux

package main

import "syscall"

// dieWithWorker does nothing here: the kernel offers no parent-death
// signal, so a killed worker's commands run to their end.
func dieWithWorker(*syscall.SysProcAttr) {}
