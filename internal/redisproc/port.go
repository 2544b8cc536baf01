package redisproc

import (
	"fmt"
	"net"
)

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before returning, so another process may take it; Start retries
// with a new port when redis-server fails to bind.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
