// Command backpressure shows Limits.MaxDepth: a producer far faster than
// its worker fills the "thumbs" queue to its maximum of 20 waiting tasks
// and no further. Without WaitForRoom an enqueue over it fails with
// queue.ErrQueueFull; with it, the producer waits for the worker to make
// room. It prints the deepest the queue got.
//
//	go run ./examples/backpressure
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-backpressure", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func main() {
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-backpressure"}

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	// at most 20 tasks may wait in the queue, checked as each one is enqueued
	if err := insp.SetLimits(ctx, "thumbs", queue.Limits{MaxDepth: 20}); err != nil {
		log.Fatal(err)
	}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}

	// no worker yet: the 21st task finds the queue full
	for i := range 21 {
		_, err := client.Enqueue(ctx, queue.NewRawTask("thumb", []byte(fmt.Sprint(i))), queue.In("thumbs"))
		if errors.Is(err, queue.ErrQueueFull) {
			fmt.Printf("task %d refused: %v\n", i+1, err)
		} else if err != nil {
			log.Fatal(err)
		}
	}

	const n = 100
	done := make(chan struct{}, n+20)
	mux := worker.NewMux()
	mux.HandleFunc("thumb", func(ctx context.Context, t *worker.Task) error {
		time.Sleep(5 * time.Millisecond) // the slow part: resizing an image
		done <- struct{}{}
		return nil
	})
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg, Queues: map[string]int{"thumbs": 1}, Concurrency: 2}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	// with WaitForRoom the producer keeps pace with the worker instead
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	deepest := int64(0)
	for i := range n {
		if _, err := client.Enqueue(wctx, queue.NewRawTask("thumb", []byte(fmt.Sprint(i))), queue.In("thumbs"), queue.WaitForRoom()); err != nil {
			log.Fatal(err)
		}
		qi, err := insp.QueueInfo(ctx, "thumbs")
		if err != nil {
			log.Fatal(err)
		}
		deepest = max(deepest, qi.Pending)
	}
	for range n + 20 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			log.Fatal("the tasks did not finish")
		}
	}
	fmt.Printf("%d more tasks enqueued with WaitForRoom and run; the queue never held more than %d (MaxDepth 20)\n", n, deepest)
}
