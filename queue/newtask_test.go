package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/wire"
)

// TestNewTaskRefusesMalformedMsgpack: a msgpack.RawMessage (or a custom
// encoder's output) whose header claims more than its bytes hold is
// ErrInvalid at NewTask, naming the length, rather than a task every
// worker sends to dead; whole msgpack, even a timestamp the decoder could
// misread, is a task.
func TestNewTaskRefusesMalformedMsgpack(t *testing.T) {
	for want, raw := range map[string]msgpack.RawMessage{
		"claims 4294967295 elements":        {0xdd, 0xff, 0xff, 0xff, 0xff},
		"claims 100000000 entries":          {0xdf, 0x05, 0xf5, 0xe1, 0x00},
		"claims 4294967295 bytes":           {0xc6, 0xff, 0xff, 0xff, 0xff},
		"claims 2 elements; 1 bytes remain": {0x92, 0x01},
	} {
		if _, err := NewTask("t", raw); !errors.Is(err, ErrInvalid) || !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("NewTask(% x): %v, want ErrInvalid naming %q", []byte(raw), err, want)
		}
	}
	for _, raw := range []msgpack.RawMessage{{0x92, 0x01, 0x02}, {0x81, 0xa2, 'a', 't', 0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}} {
		if _, err := NewTask("t", raw); err != nil {
			t.Errorf("NewTask(% x): %v", []byte(raw), err)
		}
	}
}

// TestNewTaskRefusesPastTheDefaultLimit: a value that encodes to more than
// 1 MiB, the default Config.MaxPayloadSize, is refused by NewTask with the
// error and message Enqueue gives it, so a 50 MB value fails where it is
// made; at the limit it is a task, and the default Client enqueues it. A
// Client allowing more takes a larger payload from NewRawTask.
func TestNewTaskRefusesPastTheDefaultLimit(t *testing.T) {
	limit := config.DefaultMaxPayloadSize
	over := make([]byte, limit) // msgpack adds a 5-byte header
	_, err := NewTask("big", over)
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, errPayloadTooLarge) ||
		!strings.Contains(err.Error(), fmt.Sprintf(`queue: payload too large: task "big" payload is %d bytes, limit %d`, limit+5, limit)) {
		t.Fatalf("NewTask of %d bytes: %v", limit+5, err)
	}
	task, err := NewTask("fits", make([]byte, limit-5))
	if err != nil || len(task.Payload()) != limit {
		t.Fatalf("NewTask at the limit: %v", err)
	}
	b := setup(t, Config{})
	if _, err := b.client.Enqueue(context.Background(), task); err != nil {
		t.Fatalf("Enqueue at the limit: %v", err)
	}
	_, err = b.client.Enqueue(context.Background(), NewRawTask("big", make([]byte, limit+1)))
	if !errors.Is(err, errPayloadTooLarge) {
		t.Fatalf("Enqueue of a raw payload past the limit: %v", err)
	}
	larger := setup(t, Config{MaxPayloadSize: 2 * limit})
	if _, err := larger.client.Enqueue(context.Background(), NewRawTask("big", make([]byte, limit+1))); err != nil {
		t.Fatalf("a Client allowing 2 MiB, NewRawTask past 1 MiB: %v", err)
	}
}
