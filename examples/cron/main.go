// Command cron runs a periodic task every 2 seconds on two worker servers
// at once, as two processes of a fleet would: each tick is enqueued
// exactly once, because its task ID is derived from the schedule's name
// and the tick's time. It prints the ticks for about 7 seconds, then what
// Inspector.Schedules knows of the schedule.
//
//	go run ./examples/cron
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-cron", apart from anything else in that Redis.
package main

import (
	"cmp"
	"context"
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
	cfg := queue.Config{Prefix: "example-cron"}

	// Every server carries the same schedules; specs are robfig/cron's,
	// in UTC unless they say CRON_TZ=.
	schedules := []worker.Schedule{{
		Name: "heartbeat",
		Spec: "@every 2s",
		Task: queue.NewRawTask("heartbeat", []byte("ping")),
	}}
	start := time.Now()
	var servers []*worker.Server
	for _, name := range []string{"server-1", "server-2"} {
		mux := worker.NewMux()
		mux.HandleFunc("heartbeat", func(ctx context.Context, t *worker.Task) error {
			fmt.Printf("%4.1fs  tick %s run by %s\n", time.Since(start).Seconds(), t.ID, name)
			return nil
		})
		srv, err := worker.NewServer(rdb, worker.Config{Config: cfg, Schedules: schedules, WorkerID: name}, mux)
		if err != nil {
			log.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			log.Fatal(err)
		}
		servers = append(servers, srv)
	}

	time.Sleep(7 * time.Second)
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			log.Fatal(err)
		}
	}

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	infos, err := insp.Schedules(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range infos {
		fmt.Printf("schedule %q (%s): task %s on queue %q; last run %s, next run %s\n",
			s.Name, s.Spec, s.Type, s.Queue, s.LastRun.Format(time.TimeOnly), s.NextRun.Format(time.TimeOnly))
	}
}
