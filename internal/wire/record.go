package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Record is a task's mutable state once it leaves pending, written by the
// scripts (include/record.lua) as a msgpack array in this field order.
type Record struct {
	State        string
	Attempts     int
	Token        int64
	Worker       string
	LastError    string
	LastFailedAt int64  // unix ms
	StartedAt    int64  // unix ms
	FinishedAt   int64  // unix ms
	NextAt       int64  // unix ms: when a scheduled or retrying task is due
	Key          string // the group the lease counts against
}

// DecodeMsgpack reads a record array of any length, like Message.
func (r *Record) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeArray(d, []any{&r.State, &r.Attempts, &r.Token, &r.Worker, &r.LastError,
		&r.LastFailedAt, &r.StartedAt, &r.FinishedAt, &r.NextAt, &r.Key})
}

// decodeArray decodes an array into fields in order, tolerating arrays
// shorter or longer than fields.
func decodeArray(d *msgpack.Decoder, fields []any) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("msgpack: nil where an array was expected")
	}
	for i := 0; i < n; i++ {
		if i >= len(fields) {
			if err := d.Skip(); err != nil {
				return err
			}
			continue
		}
		if err := d.Decode(fields[i]); err != nil {
			return fmt.Errorf("field %d: %w", i+1, err)
		}
	}
	return nil
}

// DecodeRecord decodes a record written by a script.
func DecodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode task record (%d bytes): %w", len(b), err)
	}
	return &r, nil
}
