// Package worker runs shardq tasks: a Server leases tasks from the queues
// it is given and runs a Handler for each, at most Config.Concurrency at
// once.
//
//	mux := worker.NewMux()
//	mux.Handle("email:send", worker.Typed(func(ctx context.Context, t *worker.Task, e Email) error {
//		return send(ctx, e)
//	}))
//	srv, err := worker.NewServer(rdb, worker.Config{Queues: map[string]int{"email": 3, "default": 1}}, mux)
//	err = srv.Start(ctx)
//	// ... on SIGTERM:
//	err = srv.Shutdown(ctx)
//
// Each queue partition has a fetcher that pops a batch of tasks in one
// script call, the acknowledgements of the last batch riding in the same
// call; an idle fetcher blocks on its queue in one-second slices, so a task
// enqueued to an idle worker starts within a round trip. Free handler slots
// go to the queues in proportion to their weights, or to the heaviest
// first with Config.StrictPriority. Config.QueuePatterns ("tenant:*")
// serves, besides, every queue whose name matches, as producers create
// them, without a restart.
//
// Every task runs under a lease with a fencing token: a worker that stalls
// or dies loses its tasks to others when the lease expires, and its late
// outcomes are rejected. Delivery is at least once: a task is removed only
// after its handler returned nil. What a handler returns decides the rest:
// nil (done), an error (retried after Config.RetryDelay until its MaxRetry
// is spent, then dead), SkipRetry (dead now), RetryIn (retried after a
// given delay) or Snooze (back later without counting an attempt). Panics
// are failures carrying the stack.
//
// Limits (queue concurrency fleet-wide, start rate, concurrency per key)
// live in Redis and apply at dequeue; Semaphore bounds work spanning
// queues; Config.Schedules enqueue periodic tasks, exactly once per tick
// however many servers carry them.
//
// A server also keeps batches and workflows (queue.Client.NewBatch,
// EnqueueWorkflow; a chain is a workflow, queue.Chain) moving: a node's
// success or death is recorded with its ack or failure and applied at
// its workflow's home, which sends the callbacks or the nodes it frees.
// In a handler, Task.PreviousResult reads the previous link's result,
// Task.ParentResult a parent node's, and Task.ExtendWorkflow adds nodes
// to its workflow; queue.Client.AddToBatch, with the handler's context,
// adds tasks to the task's own batch (Task.Workflow names it).
package worker
