package queue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/wire"
)

// Errors callers branch on with errors.Is. Each is wrapped with what was
// wrong and with which value.
var (
	// ErrInvalidQueueName reports a queue name shardq cannot use as part of a Redis key.
	ErrInvalidQueueName = errors.New("queue: invalid queue name")
	// ErrInvalidTask reports a task without a type, or with a bad task ID.
	ErrInvalidTask = errors.New("queue: invalid task")
	// ErrInvalidOption reports an option value out of range (a negative retry count, a zero TTL).
	ErrInvalidOption = errors.New("queue: invalid option")
	// ErrInvalidConfig reports a Config value out of range.
	ErrInvalidConfig = errors.New("queue: invalid config")
	// ErrPayloadTooLarge reports a payload over Config.MaxPayloadSize.
	ErrPayloadTooLarge = errors.New("queue: payload too large")
	// ErrPayloadMismatch reports a payload that decodes but fills nothing
	// of the type it is decoded into (TaskInfo.Decode, worker.Task.Decode,
	// worker.Typed): an object none of whose keys names a field.
	ErrPayloadMismatch = wire.ErrPayloadMismatch
	// ErrUnknownKey reports a value encrypted with a key the KeyRing
	// lacks, or read without a ring: WaitResult of such a result. A
	// worker sends such a task to dead with this error's text.
	ErrUnknownKey = envelope.ErrUnknownKey
	// ErrDuplicateTaskID reports a caller-chosen task ID that is already
	// taken. Enqueue and EnqueueMany return it with the info of the task
	// that holds the ID.
	ErrDuplicateTaskID = errors.New("queue: duplicate task ID")
	// ErrDuplicateUniqueTask reports a unique task whose uniqueness lock is held by another task.
	ErrDuplicateUniqueTask = errors.New("queue: duplicate unique task")
	// ErrQueueNotFound reports a queue the registry does not know: nothing
	// was ever enqueued to it, no worker serves it, or it was deleted.
	ErrQueueNotFound = errors.New("queue: no such queue")
	// ErrQueueNotEmpty reports a DeleteQueue without force of a queue that
	// holds tasks.
	ErrQueueNotEmpty = errors.New("queue: queue not empty")
	// ErrQueueInUse reports a DeleteQueue without force of a queue that
	// live workers serve.
	ErrQueueInUse = errors.New("queue: queue in use")
	// ErrTaskNotFound reports a task ID that no record and no recent feed entry knows.
	ErrTaskNotFound = errors.New("queue: task not found")
	// ErrQueueFull reports a task refused because its queue holds
	// Limits.MaxDepth tasks waiting, or its group
	// Limits.GroupMaxDepth. Nothing of the task was written.
	ErrQueueFull = errors.New("queue: queue full")
	// ErrRedisOutOfMemory reports that Redis refused a write at its maxmemory
	// limit. Nothing was enqueued; workers keep draining the queue.
	ErrRedisOutOfMemory = errors.New("queue: redis is out of memory (maxmemory reached)")
	// ErrNotReplicated reports a write (an enqueue, a worker's ack) that
	// the master made but fewer than Config.WaitReplicas replicas
	// acknowledged within Config.WaitTimeout: it stands unless the master
	// fails before a replica has it. Enqueue returns the task's info with
	// it; do not enqueue again without a TaskID, or the task runs twice.
	ErrNotReplicated = errors.New("queue: write not confirmed by replicas")
	// ErrPartitionClosed reports a task that found every partition it was
	// routed to closed: its queue's partition count was being lowered
	// (Inspector.SetPartitions) and the client's view of it stayed stale
	// over several tries. Nothing of the task was written.
	ErrPartitionClosed = errors.New("queue: partition closed")
	// ErrInvalidPartitions reports a partition count out of range.
	ErrInvalidPartitions = errors.New("queue: invalid partition count")
	// ErrBatchNotFound reports a batch ID no flow home knows: never
	// created, or finished longer ago than Config.FlowRetention.
	ErrBatchNotFound = errors.New("queue: batch not found")
	// ErrBatchFinished reports an Add to a batch whose members have all
	// finished and whose callbacks went out.
	ErrBatchFinished = errors.New("queue: batch finished")
	// ErrBatchClosed reports an Add from outside a closed batch.
	ErrBatchClosed = errors.New("queue: batch closed")
	// ErrInvalidWorkflow reports a workflow refused before anything was
	// written: empty, a cycle, a node name used twice, an unknown parent,
	// or over MaxWorkflowNodes or MaxWorkflowEdges.
	ErrInvalidWorkflow = errors.New("queue: invalid workflow")
	// ErrWorkflowNotFound reports a workflow ID no flow home knows: never
	// created, or finished longer ago than Config.FlowRetention.
	ErrWorkflowNotFound = errors.New("queue: workflow not found")
	// ErrWorkflowFinished reports an extension or a cancel of a workflow
	// whose nodes have all finished.
	ErrWorkflowFinished = errors.New("queue: workflow finished")
	// ErrWorkflowCancelled reports an extension of a cancelled workflow.
	ErrWorkflowCancelled = errors.New("queue: workflow cancelled")
)

// EnqueueError reports the tasks of an EnqueueMany that have an error;
// the others were enqueued. Errs has one entry per task, nil for those
// enqueued. An entry with ErrNotReplicated is a task that was enqueued,
// whose write the replicas did not confirm in time: its info is not nil.
// errors.Is matches any of them.
type EnqueueError struct {
	Errs []error
}

// Error lists how many tasks failed and the first failure.
func (e *EnqueueError) Error() string {
	var first error
	n := 0
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return fmt.Sprintf("queue: %d of %d tasks not enqueued; first: %v", n, len(e.Errs), first)
}

// Unwrap returns the non-nil task errors.
func (e *EnqueueError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// redisError translates what Redis answered into a public error.
func redisError(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "OOM ") {
		return fmt.Errorf("%w: %v", ErrRedisOutOfMemory, err)
	}
	return err
}
