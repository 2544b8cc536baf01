//go:build !unix

package main

import "os/exec"

// ownProcessGroup does nothing here: cancelling kills the command only.
func ownProcessGroup(*exec.Cmd) {}
