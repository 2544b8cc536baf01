// Command workflow runs an order through a graph of tasks. The order is
// fetched first; then the card is charged and the stock reserved side by
// side. Ship joins them, and two emails follow ship. The status email is
// on an EdgeRun edge, so it goes out whether the parcel ships or not. The
// review request is on an EdgeSkip edge, so it is skipped when the parcel
// does not ship. The reserve step fans out from its handler: it adds one
// pick node per item of the order, each before ship, which waits for them
// too.
//
// The lamp is out of stock the first time: its pick goes dead, ship fails,
// the status email says the order is delayed, the review request is
// skipped and the workflow fails. The program then restocks the lamp and
// retries the dead pick through the Inspector, as an operator would from
// the dashboard. The graph resumes below it: ship runs, then the review
// request, and the workflow succeeds. It prints the workflow's progress
// as GetWorkflow sees it, and every node at the end.
//
//	go run ./examples/workflow
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-workflow", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"encoding/json"
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

// Order is what the fetch node passes on to its children (SetResult).
type Order struct {
	ID    int      `json:"id"`
	Items []string `json:"items"`
	Total string   `json:"total"`
}

func main() {
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-workflow"}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}

	var lampRestocked atomic.Bool // the operator's fix, made before the retry
	var statusMails atomic.Int64
	mux := worker.NewMux()
	mux.HandleFunc("order:fetch", func(ctx context.Context, t *worker.Task) error {
		order, _ := json.Marshal(Order{ID: 7, Items: []string{"book", "lamp", "mug"}, Total: "49.90 EUR"})
		return t.SetResult(ctx, order) // charge and reserve read it by the name "fetch"
	})
	mux.HandleFunc("card:charge", func(ctx context.Context, t *worker.Task) error {
		order, err := fetched(ctx, t)
		if err != nil {
			return err
		}
		return t.SetResult(ctx, []byte("ch_42: "+order.Total))
	})
	mux.HandleFunc("stock:reserve", func(ctx context.Context, t *worker.Task) error {
		order, err := fetched(ctx, t)
		if err != nil {
			return err
		}
		// Fan-out: one pick per item, each after reserve and before ship,
		// which was recorded with the graph and still waits.
		more := queue.NewWorkflow()
		for _, item := range order.Items {
			more.Add("pick-"+item, queue.NewRawTask("stock:pick", []byte(item), queue.In("stock")),
				queue.After("reserve"), queue.Before("ship"))
		}
		// A retry of this handler adds the same nodes: a repeat that
		// changes nothing.
		err = t.ExtendWorkflow(ctx, more)
		if errors.Is(err, queue.ErrInvalid) {
			return worker.SkipRetry(err) // a bad graph stays bad
		}
		return err
	})
	mux.HandleFunc("stock:pick", func(ctx context.Context, t *worker.Task) error {
		if string(t.Payload) == "lamp" && !lampRestocked.Load() {
			return worker.SkipRetry(errors.New("lamp: none left in stock"))
		}
		return nil
	})
	mux.HandleFunc("order:ship", func(ctx context.Context, t *worker.Task) error {
		charge, err := t.ParentResult(ctx, "charge")
		if err != nil {
			return err
		}
		fmt.Println("        order 7 shipped as parcel 1Z999")
		return t.SetResult(ctx, []byte("parcel 1Z999 paid by "+string(charge)))
	})
	mux.HandleFunc("email:status", func(ctx context.Context, t *worker.Task) error {
		// over an EdgeRun edge: it runs after ship whatever ship did, and
		// ship's result is nil when ship did not succeed
		parcel, err := t.ParentResult(ctx, "ship")
		if err != nil {
			return err
		}
		statusMails.Add(1)
		if parcel == nil {
			fmt.Println("        status email: order 7 is delayed, we are on it")
		} else {
			fmt.Printf("        status email: order 7 shipped: %s\n", parcel)
		}
		return nil
	})
	mux.HandleFunc("email:review", func(ctx context.Context, t *worker.Task) error {
		fmt.Println("        review request sent for order 7")
		return nil
	})
	srv, err := worker.NewServer(rdb, worker.Config{Config: cfg,
		Queues: map[string]int{"orders": 1, "payments": 2, "stock": 2, "shipping": 1, "emails": 1}}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	wf := queue.NewWorkflow()
	wf.Add("fetch", queue.NewRawTask("order:fetch", []byte(`{"order": 7}`), queue.In("orders")))
	wf.Add("charge", queue.NewRawTask("card:charge", nil, queue.In("payments")), queue.After("fetch"))
	wf.Add("reserve", queue.NewRawTask("stock:reserve", nil, queue.In("stock")), queue.After("fetch"))
	wf.Add("ship", queue.NewRawTask("order:ship", nil, queue.In("shipping")), queue.After("charge"), queue.After("reserve"))
	wf.Add("notify", queue.NewRawTask("email:status", nil, queue.In("emails")),
		queue.Edge{Parent: "ship", OnDead: queue.EdgeRun})
	wf.Add("review", queue.NewRawTask("email:review", nil, queue.In("emails")),
		queue.Edge{Parent: "ship", OnDead: queue.EdgeSkip})
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("workflow", id)

	start, last := time.Now(), ""
	show := func() *queue.WorkflowInfo {
		wi, err := insp.GetWorkflow(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		var counts []string
		for _, s := range []queue.State{queue.StateWaiting, queue.StateEnqueued, queue.StateSucceeded,
			queue.StateDead, queue.StateFailed, queue.StateSkipped} {
			if n := wi.Counts[s]; n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n, s))
			}
		}
		now := fmt.Sprintf("%-9s %d nodes: %s", wi.State, len(wi.Nodes), strings.Join(counts, ", "))
		if wi.State == queue.StateFailed {
			var off []string
			for _, n := range wi.Nodes {
				if n.State != queue.StateSucceeded {
					off = append(off, n.Name+" "+string(n.State))
				}
			}
			now += "\n        " + strings.Join(off, ", ") + "\n        why: " + wi.Why
		}
		if now != last {
			fmt.Printf("%4.1fs  %s\n", time.Since(start).Seconds(), now)
			last = now
		}
		return wi
	}
	retried := false
	wi := show()
	for ; wi.State != queue.StateSucceeded; wi = show() {
		if time.Since(start) > 30*time.Second {
			log.Fatal("the workflow did not succeed within 30s")
		}
		// the workflow stays failed until the retried pick succeeds
		if wi.State == queue.StateFailed && !retried {
			retried = true
			lampRestocked.Store(true)
			dead := wi.Node("pick-lamp")
			fmt.Printf("        lamp restocked; retrying pick-lamp (%s)\n", dead.TaskID)
			if err := insp.RunTask(ctx, dead.Queue, dead.TaskID); err != nil {
				log.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	fmt.Println()
	for _, n := range wi.Nodes {
		var parents []string
		for _, e := range n.Parents {
			parents = append(parents, fmt.Sprintf("%s(%s)", e.Parent, e.OnDead))
		}
		fmt.Printf("  %-12s %-14s %-9s %-10s after %s\n", n.Name, n.Type, n.Queue, n.State, cmp.Or(strings.Join(parents, " "), "-"))
	}
	parcel, err := insp.NodeResult(ctx, id, "ship")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ship's result: %s\n", parcel)
	// notify finished before the retry: a node that finished does not run again
	fmt.Printf("status emails sent: %d\n", statusMails.Load())
	if statusMails.Load() != 1 {
		log.Fatal("the status email did not go out once")
	}
}

// fetched reads the order the fetch node passed on.
func fetched(ctx context.Context, t *worker.Task) (Order, error) {
	var o Order
	b, err := t.ParentResult(ctx, "fetch")
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, worker.SkipRetry(fmt.Errorf("order from fetch: %w", err))
	}
	return o, nil
}
