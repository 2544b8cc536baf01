// Command chain runs an order through three steps as a chain: charge the
// card, then write the invoice (which reads the charge's result), then
// email the receipt, each in its own queue, each only after the one
// before it succeeded. A chain is a workflow of that shape (queue.Chain).
// The invoice step fails for good the first time (a missing tax rate);
// the workflow fails there, and the program retries the dead link through
// the Inspector, as an operator would from the dashboard, and the chain
// resumes and finishes. It prints the links as GetWorkflow sees them at
// each change.
//
//	go run ./examples/chain
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-chain", apart from anything else in that Redis.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
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
	cfg := queue.Config{Prefix: "example-chain"}

	var taxRateLoaded atomic.Bool // the operator's fix, made before the retry
	mux := worker.NewMux()
	mux.HandleFunc("card:charge", func(ctx context.Context, t *worker.Task) error {
		return t.SetResult(ctx, []byte("ch_42: 19.90 EUR")) // the next link reads it
	})
	mux.HandleFunc("invoice:write", func(ctx context.Context, t *worker.Task) error {
		charge, err := t.PreviousResult(ctx)
		if err != nil {
			return err
		}
		if !taxRateLoaded.Load() {
			return worker.SkipRetry(errors.New("no tax rate for country FR"))
		}
		return t.SetResult(ctx, []byte("invoice INV-7 for "+string(charge)))
	})
	mux.HandleFunc("email:receipt", func(ctx context.Context, t *worker.Task) error {
		invoice, err := t.PreviousResult(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("        receipt sent: %s\n", invoice)
		return nil
	})
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg,
		Queues: map[string]int{"payments": 2, "billing": 1, "emails": 1}}, mux)
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
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	id, err := client.EnqueueWorkflow(ctx, queue.Chain(
		queue.NewRawTask("card:charge", []byte(`{"order": 7}`), queue.In("payments")),
		queue.NewRawTask("invoice:write", []byte(`{"order": 7}`), queue.In("billing")),
		queue.NewRawTask("email:receipt", []byte(`{"order": 7}`), queue.In("emails"))))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("chain", id)

	start, last := time.Now(), ""
	show := func() *queue.WorkflowInfo {
		wi, err := insp.GetWorkflow(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		var links []string
		for _, l := range wi.Nodes {
			links = append(links, fmt.Sprintf("%s:%s", l.Type, l.State))
		}
		now := fmt.Sprintf("%-9s %s", wi.State, strings.Join(links, "  "))
		if wi.State == queue.StateFailed {
			now += "\n        " + wi.Why
		}
		if now != last {
			fmt.Printf("%4.1fs  %s\n", time.Since(start).Seconds(), now)
			last = now
		}
		return wi
	}
	retried := false // a retried link stays dead until it succeeds
	for wi := show(); wi.State != queue.StateSucceeded; wi = show() {
		if time.Since(start) > 30*time.Second {
			log.Fatal("the chain did not finish within 30s")
		}
		for _, l := range wi.Nodes {
			if l.State != queue.StateDead || retried {
				continue
			}
			retried = true
			taxRateLoaded.Store(true)
			fmt.Printf("        tax rate loaded; retrying %s (%s)\n", l.Type, l.TaskID)
			if err := insp.RunTask(ctx, l.Queue, l.TaskID); err != nil {
				log.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
