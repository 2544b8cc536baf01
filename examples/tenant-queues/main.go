// Command tenant-queues shows worker.Config.QueuePatterns: one queue per
// tenant ("tenant:acme", "tenant:globex", ...), none of them named in the
// worker's config. The worker serves every queue matching "tenant:*", picks
// up tenants created after it started within its QueueRefresh, and gives
// the tenants with a backlog equal shares of its handlers.
//
//	go run ./examples/tenant-queues
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-tenant-queues", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
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
	cfg := queue.Config{Prefix: "example-tenant-queues"}

	var mu sync.Mutex
	ran := map[string]int{}
	order := []string{}
	mux := worker.NewMux()
	mux.HandleFunc("report", func(ctx context.Context, t *worker.Task) error {
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		ran[t.Queue]++
		order = append(order, t.Queue)
		mu.Unlock()
		return nil
	})
	srv, err := worker.NewServer(rdb, worker.Config{
		Config:        cfg,
		QueuePatterns: map[string]int{"tenant:*": 1}, // every tenant queue, as it appears
		QueueRefresh:  200 * time.Millisecond,        // how often the worker looks (default 2s)
		Concurrency:   3,
	}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	// the tenants' queues come into being with their first task, after the
	// worker started; one tenant has a far bigger backlog than the others
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	backlog := map[string]int{"tenant:acme": 300, "tenant:globex": 60, "tenant:initech": 60}
	var tasks []*queue.Task
	for q, n := range backlog {
		for i := range n {
			tasks = append(tasks, queue.NewRawTask("report", []byte(fmt.Sprint(i)), queue.In(q)))
		}
	}
	if _, err := client.EnqueueMany(ctx, tasks); err != nil {
		log.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		total := len(order)
		mu.Unlock()
		if total == len(tasks) {
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("only %d of %d tasks ran", total, len(tasks))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// while all three had a backlog (the first 180 tasks run), each tenant
	// got about a third of the handlers, the big one no more than the others
	first := map[string]int{}
	for _, q := range order[:180] {
		first[q]++
	}
	names := make([]string, 0, len(first))
	for q := range first {
		names = append(names, q)
	}
	sort.Strings(names)
	for _, q := range names {
		fmt.Printf("%-15s %3d of the first 180 tasks run, %3d in all\n", q, first[q], ran[q])
	}
}
