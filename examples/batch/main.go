// Command batch resizes a photo album as a batch: one task per photo over
// a queue of 4 partitions, a callback when every photo is done (publish
// the album) and one when every task has finished, whatever happened
// (notify the owner). One photo turns out to be a burst of three: its
// task adds three more tasks to the batch from inside its handler, after
// the producer closed it, and the callbacks wait for them. One photo is
// corrupt and goes dead, so "publish" never runs and "notify" does, once.
// It prints the batch's progress as WorkflowSummary sees it: a batch is a
// workflow whose nodes are its members, its gate and its callbacks.
//
//	go run ./examples/batch
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-batch", apart from anything else in that Redis.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync/atomic"
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
	cfg := queue.Config{Prefix: "example-batch", Partitions: map[string]int{"images": 4}}

	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	var published, notified atomic.Int64
	mux := worker.NewMux()
	mux.HandleFunc("photo:resize", func(ctx context.Context, t *worker.Task) error {
		switch string(t.Payload) {
		case "IMG_0007.jpg":
			return worker.SkipRetry(errors.New("IMG_0007.jpg: not a JPEG"))
		case "BURST_0012":
			// a burst: three more photos join the batch, from inside it,
			// with the handler's context
			var more []*queue.Task
			for i := 1; i <= 3; i++ {
				more = append(more, queue.NewRawTask("photo:resize", fmt.Appendf(nil, "BURST_0012_%d.jpg", i), queue.In("images")))
			}
			batch, _ := t.Workflow()
			_, err := client.AddToBatch(ctx, batch, more...)
			return err
		}
		time.Sleep(5 * time.Millisecond) // resizing
		return nil
	})
	mux.HandleFunc("album:publish", func(context.Context, *worker.Task) error { published.Add(1); return nil })
	mux.HandleFunc("album:notify", func(context.Context, *worker.Task) error { notified.Add(1); return nil })
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg,
		Queues: map[string]int{"images": 3, "albums": 1}, Concurrency: 8}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	b, err := client.NewBatch(ctx, queue.BatchOptions{
		Description: "album: Lisbon 2026",
		OnSuccess:   queue.NewRawTask("album:publish", nil, queue.In("albums")),
		OnComplete:  queue.NewRawTask("album:notify", nil, queue.In("albums")),
	})
	if err != nil {
		log.Fatal(err)
	}
	var photos []*queue.Task
	for i := 1; i <= 40; i++ {
		name := fmt.Sprintf("IMG_%04d.jpg", i)
		if i == 12 {
			name = "BURST_0012"
		}
		photos = append(photos, queue.NewRawTask("photo:resize", []byte(name), queue.In("images")))
	}
	if _, err := client.AddToBatch(ctx, b, photos...); err != nil {
		log.Fatal(err)
	}
	if err := client.CloseBatch(ctx, b); err != nil { // no more from outside; the burst still adds
		log.Fatal(err)
	}
	fmt.Println("batch", b, "of 40 photos, closed")

	start, last := time.Now(), ""
	for {
		// one round trip at any size; its nodes are the gate and the
		// callbacks, its counts are of every node
		bi, err := insp.WorkflowSummary(ctx, b)
		if err != nil {
			log.Fatal(err)
		}
		now := fmt.Sprintf("%s, %d nodes: %d enqueued, %d succeeded, %d dead; on-success %s, on-complete %s", bi.State, bi.Total,
			bi.Counts[queue.StateEnqueued], bi.Counts[queue.StateSucceeded], bi.Counts[queue.StateDead],
			bi.Node(".on-success").State, bi.Node(".on-complete").State)
		if now != last {
			fmt.Printf("%4.1fs  %s\n", time.Since(start).Seconds(), now)
			last = now
		}
		if bi.State != queue.StateActive && notified.Load() == 1 {
			break
		}
		if time.Since(start) > 30*time.Second {
			log.Fatal("the batch did not finish within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a second enqueue of a callback would run by now
	fmt.Printf("album:publish ran %d times (a photo died), album:notify ran %d time\n", published.Load(), notified.Load())
	if published.Load() != 0 || notified.Load() != 1 {
		log.Fatal("callbacks did not run as promised")
	}
}
