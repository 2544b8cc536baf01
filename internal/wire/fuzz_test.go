package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// The fuzz targets of every decoder of bytes that come from Redis or a
// caller. Each asserts that no input panics or kills the process, that a
// failure is an error, and, where an encoder exists, that what decodes
// encodes to bytes that decode to the same. Their seeds are f.Add calls
// here and files under testdata/fuzz/<name>, which plain go test runs;
// make fuzz runs each for a while.

// shallow lowers the nesting bound for a fuzz target: the walk is the
// same at any bound, and inputs nested 64 deep decode in microseconds,
// where the minimizer spent minutes on inputs nested 10,000 deep.
func shallow(f *testing.F) {
	maxDepth = 64
	f.Cleanup(func() { maxDepth = MaxDepth })
}

// seedBombs adds the attack inputs of issue 42 and a few well-formed
// values.
func seedBombs(f *testing.F) {
	shallow(f)
	for _, c := range bombs {
		f.Add(c.b)
	}
	f.Add([]byte{0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0})
	for _, v := range []any{nil, 1, "s", []any{1, "a"}, map[string]any{"a": []int{1}}, time.Unix(1764230000, 935_000_000),
		payloadTarget{Name: "n", Tags: []string{"t"}, Lists: map[string][]int{"l": {1}}, At: time.Unix(5, 6)}} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
}

// FuzzCheck: Check and the decoder agree. What Check refuses is
// ErrMalformed; what it accepts, Unmarshal decodes into any without
// dying, and a value decoded re-encodes to bytes that decode to the same.
func FuzzCheck(f *testing.F) {
	seedBombs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Check: %v, not ErrMalformed", err)
			}
			return
		}
		norm, err := Normalize(b)
		if err != nil {
			t.Fatalf("Check passed, Normalize: %v", err)
		}
		if err := Check(norm); err != nil {
			t.Fatalf("Normalize(% x) = % x, which Check refuses: %v", b, norm, err)
		}
		var v any
		if Unmarshal(b, &v) != nil {
			return
		}
		roundTrip(t, v)
	})
}

// roundTrip checks that v, decoded, encodes to bytes that pass Check and
// decode to what encodes the same.
func roundTrip(t *testing.T, v any) {
	t.Helper()
	enc := canonical(t, v)
	if err := Check(enc); err != nil {
		t.Fatalf("the encoding of a decoded value fails Check: %v", err)
	}
	var back any
	if err := Unmarshal(enc, &back); err != nil {
		t.Fatalf("decode(encode(%v)): %v", v, err)
	}
	if again := canonical(t, back); !bytes.Equal(enc, again) {
		t.Fatalf("decode(encode(x)) != x:\n% x\n% x", enc, again)
	}
}

// FuzzDecodePayload: a payload, msgpack or raw JSON, decodes into any,
// []any, map[string]any, a map of any keys and a struct of slices and
// maps, or fails with an error; never a panic or a fatal allocation.
func FuzzDecodePayload(f *testing.F) {
	shallow(f)
	for _, c := range bombs {
		f.Add(c.b, false)
	}
	f.Add([]byte(`{"name":"n","tags":["a"],"lists":{"l":[1,2]},"attrs":{"x":[{"y":null}]}}`), true)
	f.Add([]byte(`[1,"a",{"b":2.5}]`), true)
	f.Add([]byte(strings.Repeat("[", 70)+strings.Repeat("]", 70)), true)
	f.Add([]byte(`{"Name": 1}`), true)
	b, _ := msgpack.Marshal(payloadTarget{Name: "n", IDs: []int64{1}, Attrs: map[string]any{"a": "b"}, Sub: []payloadTarget{{}}})
	f.Add(b, false)
	b, _ = msgpack.Marshal(tagged{EnqueueNS: 1, Items: []inner{{SKU: "a"}}, Opt: &inner{N: 2}}) // as 0.1.0 keyed it
	f.Add(b, false)
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		for _, v := range targets() {
			err := DecodePayload(b, raw, v)
			if err == nil || raw {
				continue
			}
			if cerr := Check(b); cerr != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Check refuses, DecodePayload into %T: %v", v, err)
			}
		}
		if !raw {
			var v any
			if DecodePayload(b, false, &v) == nil {
				roundTrip(t, v)
			}
		}
	})
}

// FuzzUnmarshalPayload: UnmarshalPayload, the decode of a step's value
// and of a struct payload by both namings, refuses what Check refuses as
// ErrMalformed and never panics; a struct with json tags that decodes
// encodes by MarshalPayload to bytes that decode to a value that encodes
// the same (not the same value: a 0.1.0 payload may fill a field that a
// json tag of "-" leaves out of the encoding).
func FuzzUnmarshalPayload(f *testing.F) {
	seedBombs(f)
	now, _ := MarshalPayload(tagged{EnqueueNS: 7, Note: "n", Plain: "p", Both: 3, Items: []inner{{SKU: "a", N: 1}}, Tags: []string{"t"}})
	old, _ := msgpack.Marshal(tagged{EnqueueNS: 7, Items: []inner{{SKU: "a"}}, Opt: &inner{N: 2}}) // as 0.1.0 keyed it
	extra, _ := msgpack.Marshal(map[string]any{"enqueue_ns": 1, "EnqueueNS": 2, "later": "x"})
	f.Add(now)
	f.Add(old)
	f.Add(extra)
	f.Add(now[:len(now)/2])
	secret, _ := msgpack.Marshal(map[string]any{"Secret": "s", "EnqueueNS": 1}) // a field json:"-" leaves out, by its 0.1.0 name
	f.Add(secret)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range targets() {
			err := UnmarshalPayload(b, v)
			if err != nil && Check(b) != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Check refuses, UnmarshalPayload into %T: %v", v, err)
			}
		}
		var tg tagged
		if UnmarshalPayload(b, &tg) != nil {
			return
		}
		enc, err := MarshalPayload(tg)
		if err != nil {
			t.Fatalf("MarshalPayload(%+v): %v", tg, err)
		}
		var back tagged
		if err := UnmarshalPayload(enc, &back); err != nil {
			t.Fatalf("UnmarshalPayload(MarshalPayload(%+v)): %v", tg, err)
		}
		if again, _ := MarshalPayload(back); !bytes.Equal(again, enc) {
			t.Fatalf("MarshalPayload(UnmarshalPayload(% x)) = % x", enc, again)
		}
	})
}

// FuzzDecodeMessage: a stored message decodes through both entry points
// alike, or neither; one that decodes encodes, in its own form, to a
// message that decodes to the same, whose ID HeadID reads and whose group
// HeadKey does. HeadKey never reads past the bytes, and where it reads a
// message that decodes, it reads its group.
func FuzzDecodeMessage(f *testing.F) {
	seedBombs(f)
	id := NewID()
	for _, m := range []*Message{
		{ID: id, Type: "t", Payload: []byte{0x81, 0xa1, 'a', 1}, MaxRetry: CompactMaxRetry},
		{ID: id, Type: "t", Payload: []byte("{}"), Raw: true, MaxRetry: CompactMaxRetry},
		{ID: "order-7", Key: "k", Type: "t", Payload: []byte{1}, MaxRetry: 3, Timeout: 5, Deadline: 6, Retention: 7, Unique: "u",
			EnqueuedAt: 8, Headers: map[string]string{"h": "v"}, Flow: "b0:x"},
	} {
		b, _ := m.Encode()
		f.Add(b)
		full := m.AppendEncode(nil, true)
		f.Add(full)
	}
	hdr := append(append([]byte{0x9c}, mustMarshalF(f, id)...), 0xa0, 0xa1, 't', 0xc4, 0, 0xc2, 0, 0, 0, 0, 0xa0, 0)
	f.Add(append(hdr, 0xdf, 0xff, 0xff, 0xff, 0xff))
	f.Add(append(append([]byte{0x94}, mustMarshalF(f, id)...), 0xa0, 0xa1, 't', 0xc6, 0xff, 0xff, 0xff, 0xff, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		var s Message
		serr := DecodeMessageString(string(b), &s)
		if (err == nil) != (serr == nil) {
			t.Fatalf("DecodeMessage: %v; DecodeMessageString: %v", err, serr)
		}
		key, keyOK := HeadKey(string(b))
		if err != nil {
			return
		}
		if keyOK && key != m.Key {
			t.Fatalf("HeadKey %q, the message's group %q", key, m.Key)
		}
		if !sameMessage(m, &s) {
			t.Fatalf("DecodeMessage %+v, DecodeMessageString %+v", m, &s)
		}
		for _, full := range []bool{false, true} {
			enc := m.AppendEncode(nil, full)
			back, err := DecodeMessage(enc)
			if err != nil {
				t.Fatalf("decode(encode(%+v)): %v", m, err)
			}
			if !sameMessage(m, back) {
				t.Fatalf("decode(encode(x)) != x:\n%+v\n%+v", m, back)
			}
			if head, ok := HeadID(string(enc)); len(m.ID) < 1<<16 && (!ok || head != m.ID) {
				t.Fatalf("HeadID of %q's message: %q, %v", m.ID, head, ok)
			}
			if key, ok := HeadKey(string(enc)); !ok || key != m.Key {
				t.Fatalf("HeadKey of the message of group %q: %q, %v", m.Key, key, ok)
			}
		}
	})
}

func mustMarshalF(f *testing.F, v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// sameMessage compares messages, an empty map or slice equal to none.
func sameMessage(a, b *Message) bool {
	x, y := *a, *b
	x.Headers, y.Headers = nil, nil
	if !bytes.Equal(x.Payload, y.Payload) || len(a.Headers) != len(b.Headers) {
		return false
	}
	x.Payload, y.Payload = nil, nil
	for k, v := range a.Headers {
		if w, ok := b.Headers[k]; !ok || w != v {
			return false
		}
	}
	return reflect.DeepEqual(x, y)
}

// FuzzDecodeRecord: a record decodes or is an error; one that decodes
// encodes (as the scripts write it: an array in field order) to one that
// decodes to the same.
func FuzzDecodeRecord(f *testing.F) {
	seedBombs(f)
	f.Add(mustMarshalF(f, []any{"active", 2, 7, "w1", "boom", 1, 2, 3, 4, "k", "     "}))
	f.Add([]byte{0x92, 0xa1, 'a', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		enc, err := msgpack.Marshal([]any{r.State, r.Attempts, r.Token, r.Worker, r.LastError, r.LastFailedAt, r.StartedAt, r.FinishedAt, r.NextAt, r.Key})
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(enc)
		if err != nil || *back != *r {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", r, back, err)
		}
	})
}

// FuzzDecodeSteps: steps decode or are an error; EncodeSteps of what
// decodes decodes to the same.
func FuzzDecodeSteps(f *testing.F) {
	seedBombs(f)
	b, _ := EncodeSteps(Steps{{Name: "charge", At: 1, Result: []byte{0x91, 1}}, {Name: "mail"}})
	f.Add(b)
	f.Add([]byte{0x91, 0x81, 0xa1, 'v', 0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSteps(b)
		if err != nil {
			return
		}
		enc, err := EncodeSteps(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeSteps(enc)
		if err != nil || len(back) != len(s) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", s, back, err)
		}
		for i := range s {
			if back[i].Name != s[i].Name || back[i].At != s[i].At || !bytes.Equal(back[i].Result, s[i].Result) {
				t.Fatalf("step %d: %+v, want %+v", i, back[i], s[i])
			}
		}
	})
}

// FuzzDecodeProgress: progress decodes or is an error, and round-trips.
func FuzzDecodeProgress(f *testing.F) {
	seedBombs(f)
	f.Add(mustMarshalF(f, &Progress{Percent: 50, Message: "half", At: 7}))
	f.Add([]byte{0x81, 0xa1, 'm', 0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeProgress(b)
		if err != nil {
			return
		}
		enc, err := msgpack.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeProgress(enc)
		if err != nil || *back != *p {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", p, back, err)
		}
	})
}

// FuzzDecodeWorkerStatus: a worker's status, with its tasks ahead per
// group, decodes or is an error, and round-trips.
func FuzzDecodeWorkerStatus(f *testing.F) {
	seedBombs(f)
	st := &WorkerStatus{Host: "h", PID: 1, Started: 2, Queues: map[string]int{"q": 1}, Strict: true, Concurrency: 4,
		Work: map[string]QueueWork{"q": {Running: 1, Done: 2, MeanMS: 3.5, Ahead: 3, AheadGroups: map[string]int{"acme": 2, "": 1}}}, Protocol: "1.0"}
	b, _ := st.Encode()
	f.Add(b)
	f.Add([]byte{0x81, 0xa1, 'q', 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeWorkerStatus(b)
		if err != nil {
			return
		}
		enc, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeWorkerStatus(enc)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", s, err)
		}
		if !bytes.Equal(canonical(t, s), canonical(t, back)) {
			t.Fatalf("decode(encode(x)) != x: %+v, %+v", s, back)
		}
	})
}

// FuzzDecodeDelivery: an outbox delivery decodes or is an error, and
// round-trips through EncodeDelivery.
func FuzzDecodeDelivery(f *testing.F) {
	seedBombs(f)
	b, _ := EncodeDelivery(&Delivery{Queue: "q", Partition: 1, Partitions: 2, ID: "id", Msg: []byte{0x93, 1}, At: 3, In: 4, Unique: "u", UniqueTTL: 5})
	f.Add(b)
	f.Add([]byte{0x95, 0xa1, 'q', 0, 0, 0xa1, 'i', 0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelivery(b)
		if err != nil {
			return
		}
		enc, err := EncodeDelivery(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeDelivery(enc)
		if err != nil || !reflect.DeepEqual(back, d) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", d, back, err)
		}
	})
}

// FuzzDecodeFlowNote: a flow notification decodes or is an error, and
// round-trips through the layout the scripts write.
func FuzzDecodeFlowNote(f *testing.F) {
	seedBombs(f)
	f.Add(mustMarshalF(f, []any{"b1:x", "id", "s", "res", ""}))
	f.Add(mustMarshalF(f, []any{"w0:wid:node", "id", "d", "", "boom"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeFlowNote(b)
		if err != nil {
			return
		}
		enc, err := msgpack.Marshal([]any{n.Ref, n.Member, n.Outcome, string(n.Result), n.Err})
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeFlowNote(enc)
		if err != nil || back.Ref != n.Ref || back.Member != n.Member || back.Outcome != n.Outcome || !bytes.Equal(back.Result, n.Result) || back.Err != n.Err {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", n, back, err)
		}
	})
}

// FuzzFlowRef: a flow ref parses or is an error; one that parses prints
// as text that parses to the same.
func FuzzFlowRef(f *testing.F) {
	for _, s := range []string{"b0:x", "c3:chain:2", "w1:wid:node:with:colons", "c1:x:0", "b", "w1:x:", "x1:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseFlowRef(s)
		if err != nil {
			return
		}
		back, err := ParseFlowRef(r.String())
		if err != nil || back != r {
			t.Fatalf("parse(%q) = %+v; parse(%q) = %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// FuzzSplitNodeTask: a workflow node's stored task splits or is left
// whole; one that splits is what NodeTask writes of its parts.
func FuzzSplitNodeTask(f *testing.F) {
	b, _ := NodeTask("id", "q", 7, []byte{0x93, 1, 2, 3})
	f.Add(b)
	f.Add([]byte{0x93, 1, 2, 3})
	f.Add([]byte{0x7f, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, q, part, msg, ok := SplitNodeTask(b)
		if !ok {
			return
		}
		again, ok := NodeTask(id, q, part, msg)
		if !ok || !bytes.Equal(again, b) {
			t.Fatalf("NodeTask(split(% x)) = % x, %v", b, again, ok)
		}
	})
}
