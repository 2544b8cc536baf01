package wire

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestMessageFlow: a flow ref is a 13th element, after the headers (an
// empty map when there are none); a message without one is unchanged.
func TestMessageFlow(t *testing.T) {
	plain := &Message{ID: "id", Type: "t", EnqueuedAt: 5}
	pb, _ := plain.Encode()
	if pb[0] != 0x9b {
		t.Fatalf("a plain message opens with % x, want an 11-element array", pb[0])
	}
	for _, headers := range []map[string]string{nil, {"a": "1", "tenant": "acme"}} {
		m := &Message{ID: "id", Type: "t", Payload: []byte("p"), EnqueuedAt: 5, Headers: headers, Flow: "c3:0190-chain:2"}
		b, _ := m.Encode()
		if b[0] != 0x9d {
			t.Fatalf("headers %v: a flow message opens with % x, want a 13-element array", headers, b[0])
		}
		if want := mustMarshal(t, m); string(b) != string(want) {
			t.Fatalf("headers %v: encode differs:\n got % x\nwant % x", headers, b, want)
		}
		var fast, slow Message
		if !decodeFast(b, &fast) || fast.Flow != m.Flow || len(fast.Headers) != len(headers) {
			t.Fatalf("headers %v: fast path: %+v", headers, fast)
		}
		if err := msgpack.Unmarshal(b, &slow); err != nil || slow.Flow != m.Flow {
			t.Fatalf("headers %v: decoder: %+v, %v", headers, slow, err)
		}
		if !decodeFast(pb, &fast) || fast.Flow != "" {
			t.Fatalf("a plain message decoded after a flow one kept flow %q", fast.Flow)
		}
	}
}

func TestFlowRef(t *testing.T) {
	for _, r := range []FlowRef{{Kind: 'b', Home: 15, ID: "0190a0a0-0000-7000-8000-000000000000"}, {Kind: 'c', Home: 0, ID: "x:y", Link: 12}, {Kind: 'w', Home: 3, ID: "0190a0a0-0000-7000-8000-000000000000", Node: "resize:small"}} {
		got, err := ParseFlowRef(r.String())
		if err != nil || got != r {
			t.Fatalf("%q: parsed %+v, %v", r.String(), got, err)
		}
	}
	for _, bad := range []string{"", "b", "x1:id", "b:id", "bx:id", "b1:", "c1:id", "c1:id:0", "c1:id:x", "w1:id", "w1:id:", "w1::n"} {
		if _, err := ParseFlowRef(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
	// a ref that parses costs no error value: every forward parses one
	// per notification
	for _, s := range []string{"b15:id", "c0:x:y:12", "w3:id:resize:small"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseFlowRef(s) }); n != 0 {
			t.Errorf("ParseFlowRef(%q) allocates %v times, want 0", s, n)
		}
	}
}

func TestDeliveryAndNote(t *testing.T) {
	d := &Delivery{Queue: "q", Partition: 3, Partitions: 4, ID: "id", Msg: []byte{0x9b, 1}, At: 7, In: 8, Unique: "u", UniqueTTL: 9}
	b, err := EncodeDelivery(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDelivery(b)
	if err != nil || got.Queue != "q" || got.Partition != 3 || got.Partitions != 4 || got.ID != "id" || string(got.Msg) != string(d.Msg) ||
		got.At != 7 || got.In != 8 || got.Unique != "u" || got.UniqueTTL != 9 {
		t.Fatalf("delivery round trip: %+v, %v", got, err)
	}
	if _, err := DecodeDelivery([]byte{0x92, 0xa1, 'q', 0}); err == nil {
		t.Fatal("a delivery without an ID and message decoded")
	}
	n, err := DecodeFlowNote(mustMarshal(t, []any{"b1:x", "id", "s", "res", ""}))
	if err != nil || n.Ref != "b1:x" || n.Member != "id" || n.Outcome != "s" || string(n.Result) != "res" {
		t.Fatalf("note: %+v, %v", n, err)
	}
	if _, err := DecodeFlowNote([]byte("junk")); err == nil {
		t.Fatal("junk decoded as a note")
	}
}

func TestNodeTask(t *testing.T) {
	msg := []byte{0x9d, 0xa1, 'x'}
	b, ok := NodeTask("id", "q", 513, msg)
	if !ok {
		t.Fatal("NodeTask refused a common route")
	}
	id, q, p, m, ok := SplitNodeTask(b)
	if !ok || id != "id" || q != "q" || p != 513 || string(m) != string(msg) {
		t.Fatalf("SplitNodeTask = %q %q %d %x %v", id, q, p, m, ok)
	}
	// a bare message and a delivery open with a msgpack array: not split
	for _, bare := range [][]byte{msg, {0x99, 0xa1, 'q'}, nil, {5, 1}} {
		if _, _, _, _, ok := SplitNodeTask(bare); ok {
			t.Fatalf("SplitNodeTask(%x) split it", bare)
		}
	}
	// routes the header cannot hold stay bare
	long := string(make([]byte, 128))
	for _, c := range []struct {
		id, q string
		p     int
	}{{"", "q", 0}, {long, "q", 0}, {"id", long + long, 0}, {"id", "q", 65536}, {"id", "q", -1}} {
		if _, ok := NodeTask(c.id, c.q, c.p, msg); ok {
			t.Fatalf("NodeTask(%d-byte ID, %d-byte queue, %d) took it", len(c.id), len(c.q), c.p)
		}
	}
}
