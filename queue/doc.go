// Package queue is the producer side of shardq and its shared vocabulary:
// tasks, per-task options, the Client that enqueues them and the Inspector
// that reads queues, tasks and feeds.
//
// A task is a type name and a payload (any Go value, encoded with msgpack,
// or raw bytes). Enqueueing runs one Lua script per queue partition, so
// EnqueueMany of any number of tasks costs one Redis round trip:
//
//	client, err := queue.NewClient(rdb, queue.Config{})
//	task, err := queue.NewTask("email:send", Email{To: "ann@example.com"})
//	info, err := client.Enqueue(ctx, task, queue.In("email"), queue.MaxRetry(5), queue.ProcessIn(time.Minute))
//
// Tasks can form flows: EnqueueWorkflow runs a graph, each node after its
// parents, with a policy per edge for a parent that dies, and Chain
// shapes one that runs tasks one after another; NewBatch groups tasks
// across queues with OnSuccess and OnComplete callbacks, each enqueued
// exactly once (a batch is a workflow: Inspector.GetWorkflow shows both).
//
// A pending task costs one element of a sharded Redis list (its message)
// and no key of its own. Errors callers branch on are sentinels
// (ErrInvalid, ErrDuplicateTaskID,
// ErrDuplicateUniqueTask, ErrQueueFull, ErrRedisOutOfMemory, ...) matched
// with errors.Is. Every call returns within its context, even when Redis
// hangs.
//
// Limits (Inspector.SetLimits) bound how tasks start, and how many may
// wait: a queue at its Limits.MaxDepth, or a key at its GroupMaxDepth,
// refuses new tasks with ErrQueueFull, or makes the producer wait for room
// with WaitForRoom.
package queue
