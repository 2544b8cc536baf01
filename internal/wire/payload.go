package wire

import (
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// DecodePayload decodes a task's payload into v: msgpack, as queue.NewTask
// encodes it, or JSON for a raw payload (queue.NewRawTask), the usual
// encoding of producers outside Go. The error says which it tried, into
// what; callers add the task.
func DecodePayload(payload []byte, raw bool, v any) error {
	if raw {
		if err := json.Unmarshal(payload, v); err != nil {
			return fmt.Errorf("has a raw payload, read as JSON into %T: %w", v, err)
		}
		return nil
	}
	if err := msgpack.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("decode msgpack payload into %T: %w", v, err)
	}
	return nil
}
