// Command delayed-retry shows a task's life through delays, retries and
// dead: a task scheduled 2s ahead (ProcessIn), a handler that fails twice
// and then succeeds (RetryIn sets the wait before each retry), and one
// that can never succeed (SkipRetry sends it to dead at once). It prints
// each task's state as the Inspector sees it whenever it changes, until
// all three are finished.
//
//	go run ./examples/delayed-retry
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-delayed-retry", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
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
	cfg := queue.Config{Prefix: "example-delayed-retry"}

	mux := worker.NewMux()
	mux.HandleFunc("report", func(ctx context.Context, t *worker.Task) error { return nil })
	mux.HandleFunc("flaky", func(ctx context.Context, t *worker.Task) error {
		if t.Attempt <= 2 {
			return worker.RetryIn(time.Second, fmt.Errorf("upstream timeout on attempt %d", t.Attempt))
		}
		return nil
	})
	mux.HandleFunc("poison", func(ctx context.Context, t *worker.Task) error {
		return worker.SkipRetry(errors.New("malformed input: retrying cannot help"))
	})
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	keep := queue.Retention(time.Hour) // keep succeeded tasks, to show them done
	ids := map[string]string{}
	for typ, opt := range map[string]queue.Option{
		"report": queue.ProcessIn(2 * time.Second),
		"flaky":  queue.MaxRetry(5),
		"poison": queue.MaxRetry(5),
	} {
		info, err := client.Enqueue(ctx, queue.NewRawTask(typ, nil, keep), opt)
		if err != nil {
			log.Fatal(err)
		}
		ids[typ] = info.ID
	}

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	// Print each task's state whenever it changes, until all are finished.
	start, seen, finished := time.Now(), map[string]string{}, 0
	for finished < 3 && time.Since(start) < 15*time.Second {
		for _, typ := range []string{"report", "flaky", "poison"} {
			ti, err := insp.GetTask(ctx, queue.DefaultQueue, ids[typ])
			if errors.Is(err, queue.ErrNotFound) {
				continue // moving between states: look again next time
			} else if err != nil {
				log.Fatal(err)
			}
			now := fmt.Sprintf("%-9s attempts %d", ti.State, ti.Attempts)
			if ti.State == queue.StateRetry || ti.State == queue.StateDead {
				now += ", last error: " + ti.LastError
			}
			if seen[typ] == now {
				continue
			}
			seen[typ] = now
			fmt.Printf("%4.1fs  %-7s %s\n", time.Since(start).Seconds(), typ, now)
			if ti.State == queue.StateSucceeded || ti.State == queue.StateDead {
				finished++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if finished < 3 {
		log.Fatal("the tasks did not finish within 15s")
	}
}
