package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

type Email struct{ To string }

func ExampleMux_Handle() {
	mux := worker.NewMux()
	mux.Handle("email:send", worker.Typed(func(ctx context.Context, t *worker.Task, e Email) error {
		fmt.Println("send to", e.To)
		return nil
	}))
	mux.HandleFunc("cache:purge", func(ctx context.Context, t *worker.Task) error {
		fmt.Println("purge", string(t.Payload))
		return nil
	})

	// a Server calls the Mux for every task; so can a unit test
	ctx := context.Background()
	task, _ := queue.NewTask("email:send", Email{To: "ann@example.com"})
	if err := mux.ProcessTask(ctx, &worker.Task{Type: task.Type(), Payload: task.Payload()}); err != nil {
		log.Fatal(err)
	}
	if err := mux.ProcessTask(ctx, &worker.Task{Type: "cache:purge", Payload: []byte("/home"), Raw: true}); err != nil {
		log.Fatal(err)
	}

	// a type with no handler fails, and is retried: a newer worker may know it
	err := mux.ProcessTask(ctx, &worker.Task{Type: "sms:send"})
	fmt.Println(errors.Is(err, worker.ErrUnknownType))
	// Output:
	// send to ann@example.com
	// purge /home
	// true
}

func ExampleTyped() {
	type Resize struct {
		Src   string `json:"src"`
		Width int    `json:"width"`
	}
	h := worker.Typed(func(ctx context.Context, t *worker.Task, r Resize) error {
		fmt.Println("resize", r.Src, "to", r.Width)
		return nil
	})

	ctx := context.Background()
	// a raw payload (queue.NewRawTask, producers outside Go) is JSON
	err := h.ProcessTask(ctx, &worker.Task{Type: "resize", Raw: true, Payload: []byte(`{"src":"a.jpg","width":200}`)})
	fmt.Println(err)
	// a payload that fills no field of Resize never reaches the function:
	// the task goes to dead at once
	err = h.ProcessTask(ctx, &worker.Task{Type: "resize", Raw: true, Payload: []byte(`{"path":"a.jpg"}`)})
	fmt.Println(errors.Is(err, queue.ErrPayloadMismatch), errors.Is(err, worker.ErrSkipRetry))
	// Output:
	// resize a.jpg to 200
	// <nil>
	// true true
}

func ExampleSkipRetry() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	mux := worker.NewMux()
	mux.Handle("email:send", worker.Typed(func(ctx context.Context, t *worker.Task, e Email) error {
		if e.To == "" {
			// retrying cannot fix this: straight to dead
			return worker.SkipRetry(errors.New("no recipient"))
		}
		return nil
	}))
	server, err := worker.NewServer(rdb, worker.Config{}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	task, _ := queue.NewTask("email:send", Email{})
	info, err := client.Enqueue(ctx, task, queue.MaxRetry(10))
	if err != nil {
		log.Fatal(err)
	}

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	var dead *queue.TaskInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if dead, err = insp.GetTask(ctx, info.Queue, info.ID); err != nil {
			log.Fatal(err)
		}
		if dead.State == queue.StateDead {
			break
		}
	}
	fmt.Println(dead.State, dead.Attempts, dead.LastError)
	// Output:
	// dead 1 worker: skip retry: no recipient
}

func ExampleRetryIn() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	out := make(chan string, 2)
	mux := worker.NewMux()
	mux.HandleFunc("api:call", func(ctx context.Context, t *worker.Task) error {
		if t.Attempt == 1 {
			out <- "attempt 1: rate limited"
			// retry when the API says, not after the usual backoff
			return worker.RetryIn(50*time.Millisecond, errors.New("429 too many requests"))
		}
		out <- fmt.Sprintf("attempt %d: done, %d retries left", t.Attempt, t.RetriesLeft())
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	if _, err := client.Enqueue(ctx, queue.NewRawTask("api:call", nil), queue.MaxRetry(3)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-out)
	fmt.Println(<-out)
	// Output:
	// attempt 1: rate limited
	// attempt 2: done, 2 retries left
}

func ExampleSnooze() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	var asked atomic.Bool // stands for: is the upstream export finished?
	out := make(chan string, 2)
	mux := worker.NewMux()
	mux.HandleFunc("import", func(ctx context.Context, t *worker.Task) error {
		if asked.CompareAndSwap(false, true) {
			out <- fmt.Sprintf("attempt %d: not ready, snoozed", t.Attempt)
			// back in the queue later: no attempt counted, no error recorded
			return worker.Snooze(50 * time.Millisecond)
		}
		out <- fmt.Sprintf("attempt %d: imported, %d retries left", t.Attempt, t.RetriesLeft())
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{Concurrency: 1}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	if _, err := client.Enqueue(ctx, queue.NewRawTask("import", nil), queue.MaxRetry(3)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-out)
	fmt.Println(<-out)
	// Output:
	// attempt 1: not ready, snoozed
	// attempt 1: imported, 3 retries left
}

func ExampleStep() {
	charges := 0
	mux := worker.NewMux()
	mux.HandleFunc("order:checkout", func(ctx context.Context, t *worker.Task) error {
		receipt, err := worker.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			charges++ // call the payment provider here
			return "r-7", nil
		})
		if err != nil {
			return err
		}
		fmt.Println("charged, receipt", receipt)
		if t.Attempt == 1 {
			return errors.New("the mail server is down") // retried
		}
		fmt.Println("mailed receipt", receipt)
		return nil
	})

	// A Server records each step with the task in Redis. A Task that no
	// Server runs keeps them in memory, so a unit test plays a retry by
	// running the same Task again.
	ctx := context.Background()
	t := &worker.Task{ID: "order-7", Type: "order:checkout", Attempt: 1}
	fmt.Println(mux.ProcessTask(ctx, t))
	t.Attempt = 2
	fmt.Println(mux.ProcessTask(ctx, t))
	fmt.Println("charges:", charges)
	// Output:
	// charged, receipt r-7
	// the mail server is down
	// charged, receipt r-7
	// mailed receipt r-7
	// <nil>
	// charges: 1
}
