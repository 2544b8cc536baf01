package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func ExampleClient_NewBatch() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	done := make(chan string, 1)
	mux := worker.NewMux()
	mux.HandleFunc("resize", func(ctx context.Context, t *worker.Task) error { return nil })
	mux.HandleFunc("album:ready", func(ctx context.Context, t *worker.Task) error {
		// a callback carries its batch's ID
		id, _ := t.Workflow()
		done <- fmt.Sprintf("album ready (callback of a batch: %t)", id != "")
		return nil
	})
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	batch, err := client.NewBatch(ctx, queue.BatchOptions{
		OnSuccess:   queue.NewRawTask("album:ready", nil),
		Description: "resize the album's photos",
	})
	if err != nil {
		panic(err)
	}
	for _, photo := range []string{"a.jpg", "b.jpg", "c.jpg"} {
		if _, err := client.AddToBatch(ctx, batch, queue.NewRawTask("resize", []byte(photo))); err != nil {
			panic(err)
		}
	}
	_ = client.CloseBatch(ctx, batch) // no more adds from outside; the callback follows the last member
	fmt.Println(<-done)

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	// a batch is a workflow: 3 members, its gate and its callback
	info, _ := insp.GetWorkflow(ctx, batch)
	for info.State == queue.StateActive { // the callback's outcome follows its run
		time.Sleep(10 * time.Millisecond)
		info, _ = insp.GetWorkflow(ctx, batch)
	}
	fmt.Println(info.State, info.Total, info.Counts[queue.StateSucceeded], info.Description)
	// Output:
	// album ready (callback of a batch: true)
	// succeeded 5 5 resize the album's photos
}

func ExampleChain() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	out := make(chan string, 3)
	step := func(ctx context.Context, t *worker.Task) error {
		prev, err := t.PreviousResult(ctx)
		if err != nil {
			return err
		}
		out <- fmt.Sprintf("%s after %q", t.Type, prev)
		return t.SetResult(ctx, []byte(t.Type+" done"))
	}
	mux := worker.NewMux()
	for _, typ := range []string{"fetch", "parse", "store"} {
		mux.HandleFunc(typ, step)
	}
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	id, err := client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("fetch", nil),
		queue.NewRawTask("parse", nil), queue.NewRawTask("store", nil, queue.MaxRetry(3))))
	if err != nil {
		panic(err)
	}
	for range 3 {
		fmt.Println(<-out)
	}
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info, _ := insp.GetWorkflow(ctx, id); info != nil && info.State == queue.StateSucceeded {
			fmt.Println(info.State, len(info.Nodes))
			break
		}
	}
	// Output:
	// fetch after ""
	// parse after "fetch done"
	// store after "parse done"
	// succeeded 3
}
