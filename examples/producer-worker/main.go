// Command producer-worker enqueues ten typed tasks in one round trip
// (EnqueueMany) and runs them with a worker.Typed handler in the same
// process, four at a time, then shuts the worker down gracefully.
//
//	go run ./examples/producer-worker
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-producer-worker", apart from anything else in
// that Redis. Ctrl-C stops it early, gracefully.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// Resize is the payload: any Go value msgpack encodes.
type Resize struct {
	Image string
	Width int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-producer-worker"} // producers and workers must agree

	// The worker: a handler per task type, decoding the payload for us.
	const n = 10
	done := make(chan struct{}, n)
	mux := worker.NewMux()
	mux.Handle("image:resize", worker.Typed(func(ctx context.Context, t *worker.Task, r Resize) error {
		time.Sleep(100 * time.Millisecond) // the work
		fmt.Printf("resized %s to %dpx (task %s, attempt %d)\n", r.Image, r.Width, t.ID, t.Attempt)
		done <- struct{}{}
		return nil // nil acks the task; an error would retry it
	}))
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg, Queues: map[string]int{"images": 1}, Concurrency: 4}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}

	// The producer: one round trip for the whole batch.
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	var tasks []*queue.Task
	for i := range n {
		t, err := queue.NewTask("image:resize", Resize{Image: fmt.Sprintf("photo-%02d.jpg", i), Width: 200 + 100*(i%3)})
		if err != nil {
			log.Fatal(err)
		}
		tasks = append(tasks, t)
	}
	if _, err := client.EnqueueMany(ctx, tasks, queue.In("images")); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("enqueued %d tasks; 4 handlers run them\n", n)

	for range n {
		select {
		case <-done:
		case <-ctx.Done():
			fmt.Println("interrupted")
		}
		if ctx.Err() != nil {
			break
		}
	}
	// Graceful shutdown: stop fetching, let running handlers finish (up to
	// ShutdownTimeout), give back what did not.
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		log.Fatal(err)
	}
	fmt.Println("worker stopped")
}
