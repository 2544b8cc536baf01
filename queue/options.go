package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardq/shardq/internal/config"
)

// Option is a per-task setting, given to NewTask or Enqueue.
type Option func(*options) error

// DefaultQueue is the queue of tasks enqueued without In.
const DefaultQueue = "default"

type options struct {
	queue     string
	maxRetry  int
	timeout   time.Duration
	deadline  time.Time
	processAt time.Time
	processIn time.Duration
	unique    time.Duration
	uniqueID  string
	// untilFinished: the lock is held until the task finishes, then for
	// uniqueAfter (UniqueUntilFinished), whatever unique says
	untilFinished bool
	uniqueAfter   time.Duration
	taskID        string
	retention     time.Duration
	key           string
	headers       map[string]string
	flow          string // wire.FlowRef text: set by AddToBatch, NewBatch and EnqueueWorkflow only
	waitRoom      bool
}

func defaultOptions() options {
	return options{queue: DefaultQueue, maxRetry: config.DefaultMaxRetry}
}

// In puts the task on the named queue. Defaults to DefaultQueue.
func In(queue string) Option {
	return func(o *options) error {
		if err := checkQueueName(queue); err != nil {
			return err
		}
		o.queue = queue
		return nil
	}
}

// MaxRetry sets how many times the task is retried after a failed attempt
// before it goes to dead. 0 means it runs once; math.MaxInt retries
// forever. Defaults to 25.
func MaxRetry(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("%w: MaxRetry(%d), want >= 0", errInvalidOption, n)
		}
		o.maxRetry = n
		return nil
	}
}

// Timeout bounds each attempt: the handler's context is cancelled after d.
func Timeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: Timeout(%v), want > 0", errInvalidOption, d)
		}
		o.timeout = d
		return nil
	}
}

// Deadline bounds every attempt: the handler's context is cancelled at t.
func Deadline(t time.Time) Option {
	return func(o *options) error {
		if t.IsZero() {
			return fmt.Errorf("%w: Deadline(zero time)", errInvalidOption)
		}
		o.deadline = t
		return nil
	}
}

// ProcessAt delays the task until t; a time in the past means now.
func ProcessAt(t time.Time) Option {
	return func(o *options) error {
		o.processAt, o.processIn = t, 0
		return nil
	}
}

// ProcessIn delays the task by d, measured by the Redis server's clock.
func ProcessIn(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: ProcessIn(%v), want >= 0", errInvalidOption, d)
		}
		o.processIn, o.processAt = d, time.Time{}
		return nil
	}
}

// Unique rejects, with ErrDuplicateUniqueTask, any task with the same queue,
// type and payload enqueued within ttl while this one has not succeeded.
// A task that goes to dead keeps the lock until ttl runs out. See
// UniqueUntilFinished for a lock held as long as the task lives.
// On a queue of several partitions a task with a Group is placed
// by its group, so there duplicates are found among tasks of the same group.
func Unique(ttl time.Duration) Option {
	return func(o *options) error {
		if ttl < time.Millisecond {
			return fmt.Errorf("%w: Unique(%v), want >= 1ms", errInvalidOption, ttl)
		}
		o.unique = ttl
		return nil
	}
}

// UniqueBy is Unique with the caller's own uniqueness ID instead of type
// and payload (for example an order ID), so tasks with different payloads
// can collide.
func UniqueBy(id string, ttl time.Duration) Option {
	return func(o *options) error {
		if id == "" || len(id) > config.MaxNameLen {
			return fmt.Errorf("%w: UniqueBy(%q): want 1 to %d bytes", errInvalidOption, id, config.MaxNameLen)
		}
		if err := Unique(ttl)(o); err != nil {
			return err
		}
		o.uniqueID = id
		return nil
	}
}

// UniqueUntilFinished makes the task unique as Unique does, but for as
// long as the task lives rather than for a time: a task with the same
// queue, type and payload is refused with ErrDuplicateUniqueTask while
// this one is scheduled, pending, running or waiting to retry, however
// long that takes, and for after once it finished, done or dead (0:
// released when it finishes). Deleting or purging the task releases it
// at once. With UniqueBy the ID is the caller's, and UniqueBy's ttl
// gives way to this.
func UniqueUntilFinished(after time.Duration) Option {
	return func(o *options) error {
		if after < 0 {
			return fmt.Errorf("%w: UniqueUntilFinished(%v), want >= 0", errInvalidOption, after)
		}
		o.untilFinished, o.uniqueAfter = true, after
		return nil
	}
}

// TaskID gives the task the caller's ID instead of a generated one.
// Enqueueing a second task with an ID still claimed (Config.IDTTL) to the
// same queue fails with ErrDuplicateTaskID, returned with the info of the
// task that holds the ID, which makes enqueueing with an ID idempotent. IDs are claimed per queue: the same ID in another queue
// is another task (and on a queue of several partitions, tasks with a
// Group claim IDs among tasks of the same group, since the group
// places them). Any name works (UTF-8, no whitespace, braces or
// control characters); the ID reads back exactly as given. Generated IDs
// are UUIDv7s, shown as canonical UUID text and stored as their 16 bytes.
func TaskID(id string) Option {
	return func(o *options) error {
		if err := validateTaskID(id); err != nil {
			return err
		}
		o.taskID = id
		return nil
	}
}

// Retention keeps the task, with its result state, in the done feed for d
// after it succeeds. By default a finished task is removed at once.
func Retention(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: Retention(%v), want >= 0", errInvalidOption, d)
		}
		o.retention = d
		return nil
	}
}

// maxHeadersSize bounds a task's headers, keys and values together, in
// bytes: they are for small things (a trace context, a tenant), carried in
// every message.
const maxHeadersSize = 4096

// Headers sets some of the task's headers: small strings the handler reads
// in Task.Headers and GetTask and the dashboard show, such as a trace
// context (package tracing) or a tenant. A later Headers wins for the same
// name; a task's own options are applied before the call's. An empty value
// deletes the header.
func Headers(h map[string]string) Option {
	return func(o *options) error {
		for k, v := range h {
			if k == "" || strings.ContainsAny(k, "\x00\r\n") {
				return fmt.Errorf("%w: header key %q: empty or with a control character", errInvalidOption, k)
			}
			if o.headers == nil {
				o.headers = map[string]string{}
			}
			if v == "" {
				delete(o.headers, k)
				continue
			}
			o.headers[k] = v
		}
		size := 0
		for k, v := range o.headers {
			size += len(k) + len(v)
		}
		if size > maxHeadersSize {
			return fmt.Errorf("%w: headers of %d bytes, at most %d", errInvalidOption, size, maxHeadersSize)
		}
		return nil
	}
}
