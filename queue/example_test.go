package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

type Email struct {
	To      string
	Subject string
}

// exampleRedis starts a private redis-server for an example; in your code,
// connect to your own Redis.
func exampleRedis() (*redis.Client, func()) {
	srv, err := redisproc.Start()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	return rdb, func() { rdb.Close(); srv.Close() }
}

func ExampleClient_Enqueue() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	task, _ := queue.NewTask("email:send", Email{To: "ann@example.com", Subject: "hi"})
	info, err := client.Enqueue(ctx, task, queue.In("email"), queue.MaxRetry(5))
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Queue, info.Type, info.State, len(info.ID))

	later, _ := client.Enqueue(ctx, task, queue.In("email"), queue.ProcessIn(time.Hour))
	fmt.Println(later.State)

	_, err = client.Enqueue(ctx, task, queue.In("{bad}"))
	fmt.Println(err)
	// Output:
	// email email:send pending 36
	// scheduled
	// queue: invalid queue name "{bad}": contains '{'
}

func ExampleInspector_GetTask() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	task, _ := queue.NewTask("email:send", Email{To: "ann@example.com"})
	info, _ := client.Enqueue(ctx, task, queue.TaskID("welcome-ann"))

	got, _ := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	var e Email
	_ = got.Decode(&e)
	fmt.Println(got.ID, got.State, e.To)

	_, err := client.Enqueue(ctx, task, queue.TaskID("welcome-ann"))
	fmt.Println(err)
	// Output:
	// welcome-ann pending ann@example.com
	// queue: duplicate task ID: "welcome-ann" in queue "default"
}
