package upgrade_test

// workerSource is a 0.1.0 worker, built in the old tree like
// producerSource: "worker ADDR QUEUE RUNS" serves QUEUE and appends
// "old TYPE PAYLOAD" to the file RUNS for each task it runs, one write a
// line, so that a reader never sees half a run. It prints "ready ID" once
// it fetches, ID being its worker ID, and shuts down gracefully on
// SIGTERM or SIGINT, exiting 0 when shutdown succeeded.
const workerSource = `package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: worker REDIS_ADDR QUEUE RUNS")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(addr, q, runs string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	f, err := os.OpenFile(runs, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	record := worker.HandlerFunc(func(ctx context.Context, t *worker.Task) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(f, "old %s %s\n", t.Type, t.Payload)
		return err
	})
	// no retries of its own: a retried pop would hold a task for a lease
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := worker.NewServer(rdb, worker.Config{
		Config:      queue.Config{Logger: logger},
		Queues:      map[string]int{q: 1},
		Concurrency: 4,
	}, record)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready", srv.ID())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
`
