package main

import (
	"encoding/json"
	"testing"
)

// FuzzMsgpackToJSON: the conversion `shardq worker --json` makes of a
// msgpack payload returns one JSON value or an error, for any bytes;
// never a panic or a fatal allocation.
func FuzzMsgpackToJSON(f *testing.F) {
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff}, {0xdf, 0x05, 0xf5, 0xe1, 0x00}, {0xc6, 0xff, 0xff, 0xff, 0xff},
		{0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}, {0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc0, 0xc3},
		{0x81, 0xa1, 'f', 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := msgpackToJSON(b)
		if err == nil && !json.Valid(out) {
			t.Fatalf("msgpackToJSON(% x) = %s, not JSON", b[:min(len(b), 16)], out)
		}
	})
}
