package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Task is a task as a handler sees it.
type Task struct {
	ID        string
	Type      string
	Queue     string
	Partition int
	// Payload is the payload bytes: msgpack unless Raw.
	Payload []byte
	Raw     bool
	// Attempt is 1 on the first run and counts every start since.
	Attempt    int
	MaxRetry   int
	EnqueuedAt time.Time
	// StartedAt is when this attempt was leased, by the Redis server's clock.
	StartedAt time.Time
	// Deadline is when the handler's context ends (the task's timeout or
	// deadline); zero when neither was set.
	Deadline time.Time

	token     int64
	retention time.Duration
	unique    string
}

// Decode decodes the payload into v: msgpack, as queue.NewTask encodes
// it, or JSON for a raw payload (queue.NewRawTask), the usual encoding of
// producers outside Go and of queues migrated from elsewhere.
func (t *Task) Decode(v any) error {
	if t.Raw {
		if err := json.Unmarshal(t.Payload, v); err != nil {
			return fmt.Errorf("worker: task %s (%s) has a raw payload, read as JSON into %T: %w", t.ID, t.Type, v, err)
		}
		return nil
	}
	if err := msgpack.Unmarshal(t.Payload, v); err != nil {
		return fmt.Errorf("worker: decode payload of task %s (%s) into %T: %w", t.ID, t.Type, v, err)
	}
	return nil
}

// RetriesLeft returns how many retries remain should this attempt fail.
func (t *Task) RetriesLeft() int { return max(0, t.MaxRetry+1-t.Attempt) }

type taskKey struct{}

// TaskFromContext returns the task a handler's context was made for.
func TaskFromContext(ctx context.Context) (*Task, bool) {
	t, ok := ctx.Value(taskKey{}).(*Task)
	return t, ok
}
