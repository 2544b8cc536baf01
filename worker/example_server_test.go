package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func ExampleServer_Run() {
	rdb, stop := exampleRedis()
	defer stop()

	// in a program: ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mux := worker.NewMux()
	mux.HandleFunc("report:build", func(ctx context.Context, t *worker.Task) error {
		fmt.Println("built", string(t.Payload))
		cancel() // here, the last task stops the server
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{Queues: map[string]int{"reports": 1}}, mux)
	if err != nil {
		log.Fatal(err)
	}
	client, _ := queue.NewClient(rdb, queue.Config{})
	if _, err := client.Enqueue(ctx, queue.NewRawTask("report:build", []byte("2026-01")), queue.In("reports")); err != nil {
		log.Fatal(err)
	}

	// Run starts the server, blocks until ctx ends, then shuts down
	// gracefully: running handlers finish first
	if err := server.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("stopped")
	// Output:
	// built 2026-01
	// stopped
}

func ExampleSemaphore() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	// one call to the billing API at a time across every worker process
	// that uses this semaphore, whatever queues they serve
	billing, err := worker.Semaphore(rdb, worker.SemaphoreConfig{Name: "billing-api", Limit: 1, Wait: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	running, most := 0, 0
	done := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("invoice:send", func(ctx context.Context, t *worker.Task) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the call to the API
		mu.Lock()
		running--
		mu.Unlock()
		done <- struct{}{}
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{
		Concurrency: 4,
		Middleware:  []worker.Middleware{billing},
	}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	for _, invoice := range []string{"A-1", "A-2", "A-3", "A-4"} {
		if _, err := client.Enqueue(ctx, queue.NewRawTask("invoice:send", []byte(invoice))); err != nil {
			log.Fatal(err)
		}
	}
	for range 4 {
		<-done
	}
	mu.Lock()
	fmt.Println("4 invoices sent, at most", most, "at once")
	mu.Unlock()
	// Output:
	// 4 invoices sent, at most 1 at once
}

func ExampleConfig_schedules() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	ran := make(chan string, 1)
	mux := worker.NewMux()
	mux.HandleFunc("cache:refresh", func(ctx context.Context, t *worker.Task) error {
		select {
		case ran <- t.Type:
		default: // later ticks
		}
		return nil
	})
	// every server may carry the same schedules: each tick is enqueued once
	server, err := worker.NewServer(rdb, worker.Config{
		Schedules: []worker.Schedule{
			{Spec: "@every 1s", Task: queue.NewRawTask("cache:refresh", nil)},
			{Name: "nightly-report", Spec: "CRON_TZ=Europe/Paris 0 3 * * *", Task: queue.NewRawTask("report:build", nil),
				RunMissed: true},
		},
	}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	fmt.Println(<-ran, "ran")
	// Output:
	// cache:refresh ran
}

func ExampleTask_SetProgress() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	reported, finish := make(chan struct{}), make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("video:encode", func(ctx context.Context, t *worker.Task) error {
		if err := t.SetProgress(ctx, 40, "encoding part 2 of 5"); err != nil {
			return err
		}
		close(reported)
		<-finish // the rest of the work
		return t.SetProgress(ctx, 100, "done")
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
	info, err := client.Enqueue(ctx, queue.NewRawTask("video:encode", []byte("intro.mp4")))
	if err != nil {
		log.Fatal(err)
	}
	<-reported

	// what the dashboard's task page shows
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	got, err := insp.GetTask(ctx, info.Queue, info.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d%% (%s)\n", got.State, got.Progress.Percent, got.Progress.Message)
	close(finish)
	// Output:
	// active: 40% (encoding part 2 of 5)
}

func ExampleTask_SetResult() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	mux := worker.NewMux()
	mux.HandleFunc("price:quote", func(ctx context.Context, t *worker.Task) error {
		if string(t.Payload) == "unknown-sku" {
			return worker.SkipRetry(errors.New("no such SKU"))
		}
		return t.SetResult(ctx, []byte(`{"sku":"`+string(t.Payload)+`","total":42}`))
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
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	// keep the task, and so its result, for an hour after it succeeds
	info, err := client.Enqueue(ctx, queue.NewRawTask("price:quote", []byte("B-42")), queue.Retention(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	result, err := insp.WaitResult(wait, info.Queue, info.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(result))

	info, err = client.Enqueue(ctx, queue.NewRawTask("price:quote", []byte("unknown-sku")), queue.Retention(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	_, err = insp.WaitResult(wait, info.Queue, info.ID)
	fmt.Println(errors.Is(err, queue.ErrTaskDead))
	// Output:
	// {"sku":"B-42","total":42}
	// true
}
