package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/shardq/shardq/internal/serve"
	"github.com/shardq/shardq/internal/wire"
)

// Task is a task as a handler sees it.
type Task struct {
	// ID is the task's ID as users see it: canonical UUIDv7 text for a
	// generated ID, or the producer's queue.TaskID.
	ID        string
	Type      string
	Queue     string
	Partition int
	// Payload is the payload bytes: msgpack unless Raw.
	Payload []byte
	Raw     bool
	// Attempt is 1 on the first run and counts the attempts since. A run
	// that ends in Snooze, or that a graceful shutdown cut short, costs no
	// attempt: the next run has its number again. A dead task run again
	// with queue.Inspector.RunTask goes on counting, so its extra attempt
	// has a number of its own.
	Attempt    int
	MaxRetry   int
	EnqueuedAt time.Time
	// StartedAt is when this attempt was leased, by the Redis server's clock.
	StartedAt time.Time
	// Headers are the headers the producer set (queue.Header,
	// queue.Config.ContextHeaders); nil when none.
	Headers map[string]string
	// Deadline is when the handler's context ends (the task's timeout or
	// deadline); zero when neither was set.
	Deadline time.Time

	job     *serve.Job // nil for a Task no Server runs (a unit test's)
	granted int        // attempts operators granted beyond MaxRetry+1 (RunTask)
	report  report     // SetProgress's throttle
	steps   stepLog
}

// Decode decodes the payload into v: msgpack by msgpack tags, else json
// tags, else field names, as queue.NewTask encodes it (a payload of
// 0.1.0, keyed by field names, decodes as it did), or, for a raw payload
// (queue.NewRawTask, shardq enqueue --json, producers outside Go), JSON
// as encoding/json
// reads it, by json tags. A payload none of whose keys fits a field of a
// struct v is queue.ErrPayloadMismatch, never a silent zero value.
func (t *Task) Decode(v any) error {
	if err := wire.DecodePayload(t.Payload, t.Raw, v); err != nil {
		return fmt.Errorf("worker: task %s (%s): %w", t.ID, t.Type, err)
	}
	return nil
}

// RetriesLeft returns how many retries remain should this attempt fail. A
// dead task run again by an operator (queue.Inspector.RunTask) gets one
// more attempt, which has none left.
func (t *Task) RetriesLeft() int { return max(0, t.MaxRetry-(t.Attempt-1-t.granted)) }

// newTask returns the Task a handler sees of job j, with fields f.
func newTask(j *serve.Job, f serve.Fields) *Task {
	return &Task{ID: f.ID, Type: f.Type, Queue: f.Queue, Partition: f.Partition, Payload: f.Payload, Raw: f.Raw,
		Attempt: f.Attempt, MaxRetry: f.MaxRetry, EnqueuedAt: f.EnqueuedAt, StartedAt: f.StartedAt, Headers: f.Headers,
		Deadline: f.Deadline, job: j, granted: f.Granted}
}

// TaskFromContext returns the task a handler's context was made for.
func TaskFromContext(ctx context.Context) (*Task, bool) {
	t, ok := ctx.Value(serve.ViewKey{}).(*Task)
	return t, ok
}
