package queue

import (
	"fmt"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/wire"
)

// Task is a unit of work: a type name, which picks the handler, and a
// payload. Options given to NewTask are the task's defaults; options given
// to Enqueue override them.
type Task struct {
	typ     string
	payload []byte
	raw     bool
	opts    []Option
}

// NewTask returns a task whose payload is v encoded with msgpack; handlers
// decode it into their own type. A struct's fields are keyed by their
// msgpack tag, else their json tag, else their name, as JSON names them.
// It fails with ErrInvalid, so a bad task is caught where it is made, when
// v does not encode, or encodes to bytes that are not whole msgpack, or to
// more than 1 MiB, the default Config.MaxPayloadSize (as Enqueue fails: a
// Client allowing more takes NewRawTask); when typ is not a valid name; or
// when an option is invalid.
func NewTask(typ string, v any, opts ...Option) (*Task, error) {
	if err := checkType(typ); err != nil {
		return nil, err
	}
	if _, err := resolveOptions(opts, nil); err != nil {
		return nil, err
	}
	b, err := wire.MarshalPayload(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode payload of %q: %v", errInvalidTask, typ, err)
	}
	// msgpack writes a msgpack.RawMessage, or what a custom encoder
	// returns, as it is: bytes a worker would send to dead, refused here
	if err := wire.Check(b); err != nil {
		return nil, fmt.Errorf("%w: payload of %q: %w", errInvalidTask, typ, err)
	}
	if len(b) > config.DefaultMaxPayloadSize {
		return nil, fmt.Errorf("%w: task %q payload is %d bytes, limit %d", errPayloadTooLarge, typ, len(b), config.DefaultMaxPayloadSize)
	}
	return &Task{typ: typ, payload: b, opts: opts}, nil
}

// checkType validates a task type name.
func checkType(typ string) error {
	if err := checkName(typ); err != nil {
		return fmt.Errorf("%w: type %q: %s", errInvalidTask, typ, err)
	}
	return nil
}

// resolveOptions applies a task's own options, then the call's, which
// override them.
func resolveOptions(taskOpts, callOpts []Option) (options, error) {
	o := defaultOptions()
	for _, list := range [][]Option{taskOpts, callOpts} {
		for _, opt := range list {
			if err := opt(&o); err != nil {
				return options{}, err
			}
		}
	}
	return o, nil
}

// NewRawTask returns a task whose payload is b as it is (JSON, protobuf,
// text), for producers and handlers that bring their own encoding. JSON
// is what worker.Typed and Task.Decode read a raw payload as.
//
// Unlike NewTask, whose encoding of v can fail, NewRawTask has nothing to
// encode, so it returns no error, and it can be written inline in a
// batch. Its type name and options are checked when it is enqueued:
// Enqueue returns ErrInvalid, and EnqueueMany
// reports them per task in its EnqueueError, the others enqueued.
func NewRawTask(typ string, b []byte, opts ...Option) *Task {
	return &Task{typ: typ, payload: b, raw: true, opts: opts}
}

// Type returns the task's type name.
func (t *Task) Type() string { return t.typ }

// Payload returns the payload bytes: msgpack, or raw bytes for NewRawTask.
func (t *Task) Payload() []byte { return t.payload }
