package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

type Greeting struct{ Name string }

func ExampleServer() {
	srv, err := redisproc.Start() // in your code: your own Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()

	done := make(chan string)
	mux := worker.NewMux()
	mux.Handle("greet", worker.Typed(func(ctx context.Context, t *worker.Task, g Greeting) error {
		done <- fmt.Sprintf("hello, %s (attempt %d)", g.Name, t.Attempt)
		return nil
	}))
	server, err := worker.NewServer(rdb, worker.Config{Concurrency: 4}, mux)
	if err != nil {
		panic(err)
	}
	if err := server.Start(ctx); err != nil {
		panic(err)
	}

	client, _ := queue.NewClient(rdb, queue.Config{})
	task, _ := queue.NewTask("greet", Greeting{Name: "Ann"})
	if _, err := client.Enqueue(ctx, task); err != nil {
		panic(err)
	}
	fmt.Println(<-done)

	shutdown, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println(server.Shutdown(shutdown))
	// Output:
	// hello, Ann (attempt 1)
	// <nil>
}
