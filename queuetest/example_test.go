package queuetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/queuetest"
	"github.com/shardq/shardq/worker"
)

// Order is the payload of placeOrder's tasks.
type Order struct{ ID string }

// placeOrder is the code under test: it enqueues the order's confirmation
// now and a review request a week later.
func placeOrder(ctx context.Context, c *queue.Client, id string) error {
	confirm, err := queue.NewTask("order:confirm", Order{ID: id})
	if err != nil {
		return err
	}
	review, err := queue.NewTask("order:review", Order{ID: id})
	if err != nil {
		return err
	}
	if _, err := c.Enqueue(ctx, confirm, queue.In("orders")); err != nil {
		return err
	}
	_, err = c.Enqueue(ctx, review, queue.In("orders"), queue.ProcessIn(7*24*time.Hour))
	return err
}

func ExampleEnv_Drain() {
	exampleTest(func(t testing.TB) { // in your code: func TestPlaceOrder(t *testing.T) {
		env := queuetest.New(t) // a private redis-server, stopped at the end of the test
		if err := placeOrder(context.Background(), env.Client, "A-17"); err != nil {
			t.Fatal(err)
		}
		review := env.RequireEnqueued(t, "orders", "order:review")
		fmt.Println("review:", review.State)

		mux := worker.NewMux()
		mux.Handle("order:confirm", worker.Typed(func(ctx context.Context, task *worker.Task, o Order) error {
			if task.Attempt < 3 {
				return errors.New("mail server busy") // retried after its backoff
			}
			return nil
		}))
		mux.Handle("order:review", worker.Typed(func(ctx context.Context, task *worker.Task, o Order) error {
			return nil
		}))
		// runs everything due, moving the test clock past the retries'
		// backoff and the week's delay: no sleeping
		res := env.Drain(t, mux, "orders")
		fmt.Printf("%d runs, %d done, %d dead; a week passed: %t\n",
			res.Runs, res.Succeeded, res.Dead, res.Advanced >= 7*24*time.Hour)
	})
	// Output:
	// review: scheduled
	// 4 runs, 2 done, 0 dead; a week passed: true
}

func ExampleEnv_Advance() {
	exampleTest(func(t testing.TB) { // in your code: func TestHourlyDigest(t *testing.T) {
		env := queuetest.New(t)
		env.Schedule(t, worker.Schedule{Spec: "@hourly", Task: queue.NewRawTask("digest:send", nil)})

		mux := worker.NewMux()
		mux.HandleFunc("digest:send", func(ctx context.Context, task *worker.Task) error { return nil })
		// a day passes on the test clock, the schedule ticking at each hour
		res := env.Advance(t, mux, 24*time.Hour)
		fmt.Printf("%d digests sent in %v\n", res.Succeeded, res.Advanced)
	})
	// Output:
	// 24 digests sent in 24h0m0s
}
