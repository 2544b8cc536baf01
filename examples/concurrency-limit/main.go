// Command concurrency-limit shows queue limits, enforced in Redis across
// every worker process: at most 2 tasks of the "api" queue run at once
// (Limits.Concurrency) and at most 1 per tenant (Limits.GroupConcurrency
// with queue.Group), although the worker has 10 free handlers.
// It prints the highest concurrency it observed.
//
//	go run ./examples/concurrency-limit
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-concurrency-limit", apart from anything else in
// that Redis.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// observed tracks how many tasks run at once, in all and per tenant.
type observed struct {
	mu                   sync.Mutex
	running, max         int
	perTenant, maxPerKey map[string]int
}

func (o *observed) enter(tenant string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running++
	o.perTenant[tenant]++
	o.max = max(o.max, o.running)
	o.maxPerKey[tenant] = max(o.maxPerKey[tenant], o.perTenant[tenant])
}

func (o *observed) leave(tenant string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running--
	o.perTenant[tenant]--
}

func main() {
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-concurrency-limit"}

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	// Limits live in Redis: every worker applies them at its next dequeue.
	if err := insp.SetLimits(ctx, "api", queue.Limits{Concurrency: 2, GroupConcurrency: 1}); err != nil {
		log.Fatal(err)
	}

	const n = 12
	obs := &observed{perTenant: map[string]int{}, maxPerKey: map[string]int{}}
	done := make(chan string, n)
	mux := worker.NewMux()
	mux.Handle("api:call", worker.Typed(func(ctx context.Context, t *worker.Task, tenant string) error {
		obs.enter(tenant)
		time.Sleep(150 * time.Millisecond) // the call to the fragile API
		obs.leave(tenant)
		done <- tenant
		return nil
	}))
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg, Queues: map[string]int{"api": 1}, Concurrency: 10}, mux)
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
	start := time.Now()
	for i := range n {
		tenant := []string{"tenant-a", "tenant-b", "tenant-c"}[i%3]
		task, err := queue.NewTask("api:call", tenant)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := client.Enqueue(ctx, task, queue.In("api"), queue.Group(tenant)); err != nil {
			log.Fatal(err)
		}
	}
	for range n {
		select {
		case tenant := <-done:
			fmt.Printf("%5.2fs  %s call done\n", time.Since(start).Seconds(), tenant)
		case <-time.After(15 * time.Second):
			log.Fatal("the tasks did not finish")
		}
	}
	fmt.Printf("%d tasks of 150ms with 10 worker handlers took %v\n", n, time.Since(start).Round(10*time.Millisecond))
	fmt.Printf("at most %d ran at once (limit 2); at most %d per tenant (limit 1): %v\n", obs.max, maxOf(obs.maxPerKey), obs.maxPerKey)
}

func maxOf(m map[string]int) int {
	best := 0
	for _, v := range m {
		best = max(best, v)
	}
	return best
}
