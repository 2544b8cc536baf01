package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

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
