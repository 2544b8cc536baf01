package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

type Email struct {
	To      string
	Subject string
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

func ExampleClient_EnqueueMany() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	tasks := []*queue.Task{
		queue.NewRawTask("thumbnail", []byte(`{"src":"a.jpg"}`)),
		queue.NewRawTask("thumbnail", []byte(`{"src":"b.jpg"}`)),
		queue.NewRawTask("thumbnail", []byte(`{"src":"c.jpg"}`), queue.MaxRetry(-1)), // refused
	}
	// one round trip for the whole slice; a refused task leaves no trace
	// and the others are enqueued
	infos, err := client.EnqueueMany(ctx, tasks, queue.In("images"))
	var perTask *queue.EnqueueError
	if errors.As(err, &perTask) {
		for i, err := range perTask.Errs {
			if err != nil {
				fmt.Printf("task %d: %v\n", i, err)
			}
		}
	} else if err != nil {
		log.Fatal(err) // Redis down: the outcome of the batch is unknown
	}
	for i, info := range infos {
		if info != nil {
			fmt.Println(i, info.Queue, info.State)
		}
	}
	// Output:
	// task 2: queue: invalid option: MaxRetry(-1), want >= 0
	// 0 images pending
	// 1 images pending
}

func ExampleNewRedisClient() {
	url, stop := exampleRedisURL() // in your code: "redis://localhost:6379/0", or from the environment
	defer stop()
	ctx := context.Background()

	// MaxRetries -1 and context deadlines, as shardq needs them
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	info, err := client.Enqueue(ctx, queue.NewRawTask("ping", nil))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.State)

	// a bad URL is refused up front, its password hidden
	_, err = queue.NewRedisClient("http://app:secret@localhost:6379")
	fmt.Println(errors.Is(err, queue.ErrInvalid))
	fmt.Println(err)
	// Output:
	// pending
	// true
	// queue: invalid Redis URL "http://app:xxxxx@localhost:6379": scheme "http": want redis, rediss, unix, redis+cluster or redis+sentinel
}

func ExampleUnique() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	type Report struct{ Month string }
	january, _ := queue.NewTask("report:build", Report{Month: "2026-01"})
	february, _ := queue.NewTask("report:build", Report{Month: "2026-02"})

	_, err = client.Enqueue(ctx, january, queue.Unique(time.Hour))
	fmt.Println(err)
	// the same type and payload again, within the hour: refused
	_, err = client.Enqueue(ctx, january, queue.Unique(time.Hour))
	fmt.Println(errors.Is(err, queue.ErrDuplicateUniqueTask))
	// another payload is another task
	_, err = client.Enqueue(ctx, february, queue.Unique(time.Hour))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// <nil>
}

func ExampleWaitForRoom() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	// at most one upload may wait in its queue
	if err := insp.SetLimits(ctx, "uploads", queue.Limits{MaxDepth: 1}); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, queue.NewRawTask("upload", []byte("1")), queue.In("uploads")); err != nil {
		log.Fatal(err)
	}
	_, err := client.Enqueue(ctx, queue.NewRawTask("upload", []byte("2")), queue.In("uploads"))
	fmt.Println(errors.Is(err, queue.ErrQueueFull))

	// a worker takes the first upload; with WaitForRoom the producer waits
	// for that, within its context, instead of failing
	ran := make(chan string, 2)
	mux := worker.NewMux()
	mux.HandleFunc("upload", func(ctx context.Context, t *worker.Task) error {
		ran <- string(t.Payload)
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{Queues: map[string]int{"uploads": 1}}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := client.Enqueue(wait, queue.NewRawTask("upload", []byte("2")), queue.In("uploads"), queue.WaitForRoom())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.State)
	uploads := []string{<-ran, <-ran}
	slices.Sort(uploads) // handlers run concurrently
	fmt.Println(uploads)
	// Output:
	// true
	// pending
	// [1 2]
}
