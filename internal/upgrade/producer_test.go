package upgrade_test

// producerSource is the program the test writes into the 0.1.0 tree and
// builds there. It uses 0.1.0's own API only, so it must compile against
// that tree unchanged. It enqueues every form of message 0.1.0 writes:
// compact and full messages, a many-task call, a chain, a batch with both
// callbacks, and a tree of nested batches (0.1.0 has no workflows; nested
// batches are its graph of flows). It prints the flows' IDs as JSON.
const producerSource = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
)

type Typed struct {
	N    int
	Name string
}

type ids struct {
	Chain    string   ` + "`json:\"chain\"`" + `
	Batch    string   ` + "`json:\"batch\"`" + `
	Graph    string   ` + "`json:\"graph\"`" + `
	Children []string ` + "`json:\"children\"`" + `
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: producer REDIS_ADDR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		return err
	}
	in := queue.In("compat")

	// compact messages
	for i := range 5 {
		if _, err := c.Enqueue(ctx, queue.NewRawTask("plain", []byte(fmt.Sprint(i)), in)); err != nil {
			return fmt.Errorf("plain: %w", err)
		}
	}
	// full messages
	full := []*queue.Task{
		queue.NewRawTask("full", []byte("headers"), in, queue.Header("trace", "abc"), queue.MaxRetry(3)),
		queue.NewRawTask("full", []byte("key-a1"), in, queue.ConcurrencyKey("a")),
		queue.NewRawTask("full", []byte("key-a2"), in, queue.ConcurrencyKey("a")),
		queue.NewRawTask("full", []byte("key-b1"), in, queue.ConcurrencyKey("b")),
		queue.NewRawTask("full", []byte("later"), in, queue.ProcessIn(300*time.Millisecond)),
		queue.NewRawTask("full", []byte("claimed"), in, queue.TaskID("upgrade-claimed-1")),
		queue.NewRawTask("full", []byte("timeout"), queue.In("compat_b"), queue.Timeout(time.Minute)),
	}
	for _, t := range full {
		if _, err := c.Enqueue(ctx, t); err != nil {
			return fmt.Errorf("full %s: %w", t.Payload(), err)
		}
	}
	typed, err := queue.NewTask("typed", Typed{N: 7, Name: "seven"}, in)
	if err != nil {
		return err
	}
	if _, err := c.Enqueue(ctx, typed); err != nil {
		return fmt.Errorf("typed: %w", err)
	}
	var many []*queue.Task
	for i := range 10 {
		many = append(many, queue.NewRawTask("many", []byte(fmt.Sprint(i)), in))
	}
	if _, err := c.EnqueueMany(ctx, many); err != nil {
		return fmt.Errorf("many: %w", err)
	}

	var out ids
	chain, err := c.EnqueueChain(ctx,
		queue.NewRawTask("chain", []byte("1"), in),
		queue.NewRawTask("chain", []byte("2"), queue.In("compat_b")),
		queue.NewRawTask("chain", []byte("3"), in),
	)
	if err != nil {
		return fmt.Errorf("chain: %w", err)
	}
	out.Chain = chain.ID

	b, err := c.NewBatch(ctx,
		queue.BatchDescription("upgrade batch"),
		queue.OnSuccess(queue.NewRawTask("batch:success", []byte("batch"), in)),
		queue.OnComplete(queue.NewRawTask("batch:complete", []byte("batch"), queue.In("compat_b"))),
	)
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	var members []*queue.Task
	for i := range 5 {
		members = append(members, queue.NewRawTask("batch", []byte(fmt.Sprint(i)), in))
	}
	if _, err := b.Add(ctx, members...); err != nil {
		return fmt.Errorf("batch add: %w", err)
	}
	if err := b.Close(ctx); err != nil {
		return fmt.Errorf("batch close: %w", err)
	}
	out.Batch = b.ID()

	root, err := c.NewBatch(ctx,
		queue.OnSuccess(queue.NewRawTask("graph:success", []byte("root"), in)),
		queue.OnComplete(queue.NewRawTask("graph:complete", []byte("root"), in)),
	)
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	for _, name := range []string{"a", "b"} {
		child, err := root.NewBatch(ctx,
			queue.OnSuccess(queue.NewRawTask("graph:success", []byte(name), in)),
			queue.OnComplete(queue.NewRawTask("graph:complete", []byte(name), queue.In("compat_b"))),
		)
		if err != nil {
			return fmt.Errorf("graph child %s: %w", name, err)
		}
		if _, err := child.Add(ctx,
			queue.NewRawTask("graph", []byte(name+"0"), in),
			queue.NewRawTask("graph", []byte(name+"1"), queue.In("compat_b")),
		); err != nil {
			return fmt.Errorf("graph child %s add: %w", name, err)
		}
		if err := child.Close(ctx); err != nil {
			return fmt.Errorf("graph child %s close: %w", name, err)
		}
		out.Children = append(out.Children, child.ID())
	}
	if _, err := root.Add(ctx, queue.NewRawTask("graph", []byte("root0"), in)); err != nil {
		return fmt.Errorf("graph add: %w", err)
	}
	if err := root.Close(ctx); err != nil {
		return fmt.Errorf("graph close: %w", err)
	}
	out.Graph = root.ID()
	return json.NewEncoder(os.Stdout).Encode(out)
}
`
