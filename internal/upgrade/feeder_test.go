package upgrade_test

// feederSource is a 0.1.0 producer that keeps enqueueing, built in the old
// tree like producerSource: "feeder ADDR QUEUE PHASE COUNT" enqueues tasks
// of type "rolling" whose payloads are PHASE-0, PHASE-1, ..., every fifth
// in the full form with a concurrency key, and prints "enqueued PAYLOAD"
// after each. It stops after COUNT tasks, or with COUNT 0 once its
// standard input ends: the test closes it when the workers it watches
// have run enough of the stream. It enqueues every 5ms so that the stream
// lasts while a worker joins, without flooding two busy cores.
const feederSource = `package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
)

// most bounds a stream whose standard input never ends.
const most = 20000

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: feeder REDIS_ADDR QUEUE PHASE COUNT")
		os.Exit(2)
	}
	count, err := strconv.Atoi(os.Args[4])
	if err != nil || count < 0 {
		fmt.Fprintf(os.Stderr, "feeder: COUNT %q, want a count\n", os.Args[4])
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], count); err != nil {
		fmt.Fprintln(os.Stderr, "feeder:", err)
		os.Exit(1)
	}
}

func run(addr, q, phase string, count int) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	if count == 0 {
		count = most
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(stop)
		}()
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := range count {
		opts := []queue.Option{queue.In(q)}
		if i%5 == 4 {
			opts = append(opts, queue.ConcurrencyKey("tenant-"+strconv.Itoa(i%3)))
		}
		payload := phase + "-" + strconv.Itoa(i)
		if _, err := c.Enqueue(ctx, queue.NewRawTask("rolling", []byte(payload), opts...)); err != nil {
			return fmt.Errorf("enqueue %s: %w", payload, err)
		}
		fmt.Println("enqueued", payload)
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
	}
	return nil
}
`
