// Command shardq runs shardq workers, its demo and its tools.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit((&Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}).Run(ctx, os.Args[1:]))
}
