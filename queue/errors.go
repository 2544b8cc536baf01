package queue

import (
	"errors"
	"fmt"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
)

// Errors callers branch on with errors.Is. Each is wrapped with what was
// wrong and with which value; the message names the kind (an invalid
// option, a task not found), the sentinel is the idea a caller acts on.
var (
	// ErrInvalid reports an argument shardq refuses before writing
	// anything: a queue name it cannot use in a Redis key, a task without
	// a type, an option or Config value out of range, a partition count,
	// a workflow that is empty or has a cycle, a Redis URL that does not
	// parse, a payload over Config.MaxPayloadSize. Fix the call; trying
	// again does not help.
	ErrInvalid = errors.New("queue: invalid")
	// ErrNotFound reports a queue, task, workflow or batch that Redis
	// does not hold: never created, deleted, or finished longer ago than
	// its retention.
	ErrNotFound = errors.New("queue: not found")
	// ErrFinished reports a change to a workflow or batch that no longer
	// takes one: it finished, was cancelled, or (for an Add from outside a
	// batch) was closed.
	ErrFinished = errors.New("queue: finished")
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
	// ErrQueueInUse reports a DeleteQueue without force of a queue that
	// holds tasks or that live workers serve.
	ErrQueueInUse = errors.New("queue: queue in use")
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
)

// The kinds of the merged sentinels: each keeps the message 0.1.0 gave
// and matches its sentinel with errors.Is.
var (
	errInvalidQueueName  = kind("queue: invalid queue name", ErrInvalid)
	errInvalidTask       = kind("queue: invalid task", ErrInvalid)
	errInvalidOption     = kind("queue: invalid option", ErrInvalid)
	errInvalidConfig     = kind("queue: invalid config", ErrInvalid)
	errInvalidPartitions = kind("queue: invalid partition count", ErrInvalid)
	errInvalidWorkflow   = kind("queue: invalid workflow", ErrInvalid)
	errInvalidRedisURL   = kind("queue: invalid Redis URL", ErrInvalid)
	errPayloadTooLarge   = kind("queue: payload too large", ErrInvalid)
	errQueueNotFound     = kind("queue: no such queue", ErrNotFound)
	errTaskNotFound      = kind("queue: task not found", ErrNotFound)
	errBatchNotFound     = kind("queue: batch not found", ErrNotFound)
	errWorkflowNotFound  = kind("queue: workflow not found", ErrNotFound)
	errBatchFinished     = kind("queue: batch finished", ErrFinished)
	errBatchClosed       = kind("queue: batch closed", ErrFinished)
	errWorkflowFinished  = kind("queue: workflow finished", ErrFinished)
	errWorkflowCancelled = kind("queue: workflow cancelled", ErrFinished)
	errQueueNotEmpty     = kind("queue: queue not empty", ErrQueueInUse)
)

// kindError is one kind of a sentinel: its own message, the sentinel's
// identity.
type kindError struct {
	msg string
	of  error
}

func kind(msg string, of error) error { return &kindError{msg: msg, of: of} }

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.of }

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
	if rcall.IsOOM(err) {
		return fmt.Errorf("%w: %v", ErrRedisOutOfMemory, err)
	}
	return err
}
