// Command shardq runs shardq workers, its demo and its tools.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful stop; after it the signals get
	// their default action again, so a second one ends the process at once
	// (an operator in a hurry), instead of being swallowed.
	go func() {
		<-ctx.Done()
		stop()
	}()
	// go-redis logs some failures itself ("failed to dial after 5
	// attempts"), ahead of the error shardq reports for the same call;
	// the binary keeps only its own, which says what it was doing.
	redis.SetLogger(silentRedisLog{})
	os.Exit((&Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv, Name: os.Args[0]}).Run(ctx, os.Args[1:]))
}

// silentRedisLog drops go-redis's own log lines.
type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}
