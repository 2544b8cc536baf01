// Command quickstart is the smallest complete shardq program: it enqueues
// a task and runs a worker that handles it.
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/quickstart
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Ctrl-C
// stops it gracefully: running handlers finish first.
package main

import (
	"cmp"
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// Welcome is the task's payload: any Go value.
type Welcome struct{ To string }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()

	// The producer: enqueue a task.
	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	task, err := queue.NewTask("email:welcome", Welcome{To: "ann@example.com"})
	if err != nil {
		log.Fatal(err)
	}
	info, err := client.Enqueue(ctx, task)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("enqueued task %s", info.ID)

	// The worker: a handler per task type, run until Ctrl-C.
	mux := worker.NewMux()
	mux.Handle("email:welcome", worker.Typed(func(ctx context.Context, t *worker.Task, w Welcome) error {
		log.Printf("sending a welcome email to %s", w.To)
		return nil // done; an error would retry it later
	}))
	srv, err := worker.NewServer(rdb, worker.Config{}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
