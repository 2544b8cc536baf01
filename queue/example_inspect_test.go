package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func ExampleInspector_QueueInfo() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, err := queue.NewInspector(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ann@example.com", "bob@example.com"} {
		task, _ := queue.NewTask("email:send", Email{To: to})
		if _, err := client.Enqueue(ctx, task, queue.In("email")); err != nil {
			log.Fatal(err)
		}
	}
	digest, _ := queue.NewTask("email:digest", Email{To: "ann@example.com"})
	if _, err := client.Enqueue(ctx, digest, queue.In("email"), queue.ProcessIn(24*time.Hour)); err != nil {
		log.Fatal(err)
	}
	if err := insp.Pause(ctx, "email"); err != nil {
		log.Fatal(err)
	}

	info, err := insp.QueueInfo(ctx, "email")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d pending, %d scheduled, %d dead, paused %t\n",
		info.Queue, info.Pending, info.Scheduled, info.Dead, info.Paused)
	// Output:
	// email: 2 pending, 1 scheduled, 0 dead, paused true
}

func ExampleInspector_ListTasks() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	for _, to := range []string{"ann", "bob", "cy", "dee", "eve"} {
		task, _ := queue.NewTask("email:send", Email{To: to + "@example.com"})
		if _, err := client.Enqueue(ctx, task); err != nil {
			log.Fatal(err)
		}
	}

	// page through the pending tasks, next to run first, two at a time
	q := queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StatePending, Limit: 2}
	for {
		page, err := insp.ListTasks(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		var to []string
		for _, t := range page.Tasks {
			var e Email
			if err := t.Decode(&e); err != nil {
				log.Fatal(err)
			}
			to = append(to, e.To)
		}
		fmt.Println(to)
		if len(page.Tasks) < q.Limit {
			break // a short page: the end
		}
		q.After = page.Next
	}
	// Output:
	// [ann@example.com bob@example.com]
	// [cy@example.com dee@example.com]
	// [eve@example.com]
}

func ExampleInspector_RunTask() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	task, _ := queue.NewTask("email:send", Email{To: "ann@example.com"})
	info, err := client.Enqueue(ctx, task, queue.ProcessIn(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.State)

	// run it now rather than in an hour
	if err := insp.RunTask(ctx, info.Queue, info.ID); err != nil {
		log.Fatal(err)
	}
	got, err := insp.GetTask(ctx, info.Queue, info.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.State)

	// a pending task has nothing to run early
	err = insp.RunTask(ctx, info.Queue, info.ID)
	fmt.Println(errors.Is(err, queue.ErrTaskState))
	// Output:
	// scheduled
	// pending
	// true
}

func ExampleInspector_ListTasks_filter() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	client, _ := queue.NewClient(rdb, queue.Config{})
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	for _, typ := range []string{"email:welcome", "sms:send", "email:welcome", "email:reset"} {
		if _, err := client.Enqueue(ctx, queue.NewRawTask(typ, nil)); err != nil {
			log.Fatal(err)
		}
	}

	// the recently enqueued tasks whose type starts with "email:", newest first
	res, err := insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, Type: "email:*"})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.Tasks {
		fmt.Println(t.Type, t.State)
	}
	fmt.Println("scanned", res.Scanned)
	// Output:
	// email:reset pending
	// email:welcome pending
	// email:welcome pending
	// scanned 4
}

func ExampleInspector_SetLimits() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	// one export at a time per customer, however many workers run; stored
	// in Redis, so it applies at once, with no restart
	if err := insp.SetLimits(ctx, "exports", queue.Limits{GroupConcurrency: 1}); err != nil {
		log.Fatal(err)
	}

	started, release := make(chan string, 4), make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("export", func(ctx context.Context, t *worker.Task) error {
		started <- string(t.Payload)
		<-release
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{Queues: map[string]int{"exports": 1}}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	for _, customer := range []string{"acme", "acme", "acme", "globex"} {
		task := queue.NewRawTask("export", []byte(customer))
		if _, err := client.Enqueue(ctx, task, queue.In("exports"), queue.Group(customer)); err != nil {
			log.Fatal(err)
		}
	}
	<-started
	<-started // one export of each customer runs; acme's others wait

	var li *queue.LimitInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if li, err = insp.LimitInfo(ctx, "exports"); err != nil {
			log.Fatal(err)
		}
		if li.Waiting == 2 {
			break
		}
	}
	for _, key := range []string{"acme", "globex"} {
		fmt.Printf("%s: %d running, %d waiting\n", key, li.Groups[key].Running, li.Groups[key].Waiting)
	}
	close(release)
	// Output:
	// acme: 1 running, 2 waiting
	// globex: 1 running, 0 waiting
}
