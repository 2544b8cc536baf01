package wire

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"
)

func TestMessageRoundTrip(t *testing.T) {
	m := &Message{ID: NewID(), Key: "tenant-7", Type: "email:send", Payload: []byte{0x81, 0xa1, 'a', 1}, MaxRetry: 5,
		Timeout: 1000, Deadline: 2000, Retention: 3000, Unique: "u", EnqueuedAt: time.Now().UnixMilli()}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The ID is the first element, right after the array header, and the
	// key the second, as the scripts expect: each a fixstr header then bytes.
	if b[0]&0xf0 != 0x90 || b[1] != 0xa0|byte(len(m.ID)) || string(b[2:2+len(m.ID)]) != m.ID ||
		b[2+len(m.ID)] != 0xa0|byte(len(m.Key)) || string(b[3+len(m.ID):3+len(m.ID)+len(m.Key)]) != m.Key {
		t.Fatalf("message does not open with [array, id]: % x", b[:4])
	}
	got, err := DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Key != m.Key || got.Type != m.Type || string(got.Payload) != string(m.Payload) || got.MaxRetry != 5 ||
		got.Timeout != 1000 || got.Deadline != 2000 || got.Retention != 3000 || got.Unique != "u" || got.EnqueuedAt != m.EnqueuedAt {
		t.Fatalf("round trip: %+v, want %+v", got, m)
	}
}

// TestMessageLeavesOutTrailingZeros: a plain task's message stops at its
// last non-zero field, its EnqueuedAt read back from its UUIDv7 ID; an
// EnqueuedAt the ID does not hold is written; the 11-field layout of older
// builds still decodes, through both decoders.
func TestMessageLeavesOutTrailingZeros(t *testing.T) {
	id := NewID()
	at, ok := IDTime(id)
	if !ok || at < time.Now().Add(-time.Minute).UnixMilli() || at > time.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("IDTime(NewID()) = %d, %v: want about now", at, ok)
	}
	plain := &Message{ID: id, Type: "bench", Payload: make([]byte, 100), Raw: true, MaxRetry: 25, Timeout: 1800000, EnqueuedAt: at}
	b, _ := plain.Encode()
	if b[0] != 0x97 {
		t.Fatalf("plain task: array header %#x, want 7 fields (0x97)", b[0])
	}
	var viaBytes, viaMsgpack Message
	if !decodeFast(b, &viaBytes) || viaBytes.EnqueuedAt != at || viaBytes.Timeout != 1800000 || viaBytes.Deadline != 0 {
		t.Fatalf("fast decode: %+v", viaBytes)
	}
	if err := msgpack.Unmarshal(b, &viaMsgpack); err != nil || viaMsgpack.EnqueuedAt != at || viaMsgpack.MaxRetry != 25 {
		t.Fatalf("decoder: %+v, %v", viaMsgpack, err)
	}
	if enc, _ := msgpack.Marshal(plain); string(enc) != string(b) {
		t.Fatalf("EncodeMsgpack % x, Encode % x", enc, b)
	}

	other := *plain
	other.EnqueuedAt = at + 5 // not the ID's millisecond: written out
	b, _ = other.Encode()
	if got, err := DecodeMessage(b); err != nil || b[0] != 0x9b || got.EnqueuedAt != at+5 {
		t.Fatalf("EnqueuedAt apart from the ID: header %#x, %+v, %v", b[0], got, err)
	}
	caller := &Message{ID: "order-7", Type: "t"} // not a UUIDv7: nothing derived
	b, _ = caller.Encode()
	if got, err := DecodeMessage(b); err != nil || b[0] != 0x93 || got.EnqueuedAt != 0 {
		t.Fatalf("caller ID: header %#x, %+v, %v", b[0], got, err)
	}

	// the layout of earlier builds: always 11 fields, EnqueuedAt written
	old := mustMarshal(t, []any{id, "", "bench", []byte("p"), true, 25, 0, 0, 0, "", at - 1})
	var fromOld Message
	if !decodeFast(old, &fromOld) || fromOld.EnqueuedAt != at-1 || fromOld.MaxRetry != 25 {
		t.Fatalf("an 11-field message: %+v", fromOld)
	}
}

func TestDecodeMessageRejectsGarbage(t *testing.T) {
	good, _ := (&Message{ID: "x", Type: "t"}).Encode()
	for name, b := range map[string][]byte{
		"empty":     nil,
		"dummy":     []byte("\xc1shardq:dummy"),
		"truncated": good[:len(good)/2],
		"json":      []byte(`{"id":"x"}`),
		"no id":     mustEncode(t, &Message{Type: "t"}),
		"not array": mustMarshal(t, map[string]int{"a": 1}),
	} {
		if _, err := DecodeMessage(b); err == nil || !strings.Contains(err.Error(), "decode task message") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestOlderShorterMessagesDecode(t *testing.T) {
	// A message written before fields were added (a shorter array) decodes
	// with the new fields zero.
	b := mustMarshal(t, []any{"id1", "", "type1", []byte("p")})
	m, err := DecodeMessage(b)
	if err != nil || m.ID != "id1" || m.Type != "type1" || m.EnqueuedAt != 0 {
		t.Fatalf("short message: %+v, %v", m, err)
	}
}

func TestRecordDecodesScriptLayout(t *testing.T) {
	// What include/record.lua's record_new packs.
	b := mustMarshal(t, []any{"scheduled", 0, 0, "", "", 0, 0, 0, 1700000000000})
	r, err := DecodeRecord(b)
	if err != nil || r.State != "scheduled" || r.NextAt != 1700000000000 {
		t.Fatalf("record: %+v, %v", r, err)
	}
}

// TestNewID: generated IDs are UUIDv7s stored as 16 bytes, unique, and
// sort by creation time in both forms.
func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if len(id) != 16 || seen[id] {
			t.Fatalf("id %q: length %d or duplicate", id, len(id))
		}
		seen[id] = true
		u, err := uuid.Parse(PublicID(id))
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("public ID %q: %v, version %d", PublicID(id), err, u.Version())
		}
	}
	// IDs made in different milliseconds sort by creation time.
	var spaced, public []string
	for range 20 {
		id := NewID()
		spaced, public = append(spaced, id), append(public, PublicID(id))
		time.Sleep(1100 * time.Microsecond)
	}
	if !sort.StringsAreSorted(spaced) || !sort.StringsAreSorted(public) {
		t.Fatal("ids made in sequence do not sort in creation order")
	}
}

// TestIDForms: PublicID and StoredID are each other's inverse, for
// generated IDs and for any ID a caller may choose, including a 16-byte
// one (which must not pass for a packed UUID) and UUID text in other
// spellings (kept as given).
func TestIDForms(t *testing.T) {
	gen := NewID()
	for _, public := range []string{
		PublicID(gen),
		"order-42",
		"exactly16bytes!!",                     // 16 bytes: escaped
		"0123456789abcdef",                     // 16 hex characters
		"123e4567-e89b-12d3-a456-426614174000", // canonical UUID text: packed
		"123E4567-E89B-12D3-A456-426614174000", // upper case: kept as given
		"{123e4567-e89b-12d3-a456-426614174000}",
		"urn:uuid:123e4567-e89b-12d3-a456-426614174000",
		"123e4567e89b12d3a456426614174000",
		"héllo-wörld-ü",
		"bad:da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"x",
	} {
		stored := StoredID(public)
		if back := PublicID(stored); back != public {
			t.Errorf("%q: stored %q reads back as %q", public, stored, back)
		}
		if len(public) == 16 && len(stored) == 16 {
			t.Errorf("%q: a 16-byte caller ID stored unescaped, as if it were a UUID", public)
		}
	}
	if len(StoredID("123e4567-e89b-12d3-a456-426614174000")) != 16 {
		t.Error("canonical UUID text is not stored packed")
	}
	if n := Nonce(); len(n) != 6 || n == Nonce() {
		t.Errorf("nonce %q", n)
	}
}

func mustEncode(t *testing.T, m *Message) []byte {
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeMatchesMsgpack: the hand-written encoder writes exactly what
// msgpack's encoder writes for the same message, for every integer width.
func TestEncodeMatchesMsgpack(t *testing.T) {
	long := string(make([]byte, 300))
	for _, n := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 40, -1, -32, -33, -200, -40000, -1 << 40} {
		m := &Message{ID: "id", Key: long[:40], Type: long[:70000%300], Payload: make([]byte, 300), Raw: n%2 == 0,
			MaxRetry: int(n), Timeout: n, Deadline: n, Retention: n, Unique: long, EnqueuedAt: n}
		got, _ := m.Encode()
		want := mustMarshal(t, m) // through EncodeMsgpack and vmihailenco's encoder
		if string(got) != string(want) {
			t.Fatalf("n=%d: encode differs:\n got % x\nwant % x", n, got[:40], want[:40])
		}
		back, err := DecodeMessage(got)
		if err != nil || back.Timeout != n || back.Key != m.Key || len(back.Unique) != 300 {
			t.Fatalf("n=%d: round trip %+v, %v", n, back, err)
		}
	}
}

// TestDecodeFastMatchesDecoder: the fast path reads what the general
// decoder reads, for every integer width, and declines (falling back)
// on a message laid out otherwise.
func TestDecodeFastMatchesDecoder(t *testing.T) {
	long := string(make([]byte, 300))
	for _, n := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 40, -1, -32, -33, -200, -40000, -1 << 40} {
		m := &Message{ID: "id", Key: long[:40], Type: "t", Payload: make([]byte, 70000), Raw: n%2 == 0,
			MaxRetry: int(n), Timeout: n, Deadline: n, Retention: n, Unique: long, EnqueuedAt: n}
		b, _ := m.Encode()
		var fast, slow Message
		if !decodeFast(b, &fast) {
			t.Fatalf("n=%d: fast path declined our own encoding", n)
		}
		if err := msgpack.Unmarshal(b, &slow); err != nil {
			t.Fatal(err)
		}
		if fast.ID != slow.ID || fast.Key != slow.Key || fast.Type != slow.Type || len(fast.Payload) != len(slow.Payload) ||
			fast.Raw != slow.Raw || fast.MaxRetry != slow.MaxRetry || fast.Timeout != slow.Timeout || fast.Deadline != slow.Deadline ||
			fast.Retention != slow.Retention || fast.Unique != slow.Unique || fast.EnqueuedAt != slow.EnqueuedAt {
			t.Fatalf("n=%d: fast %+v, decoder %+v", n, fast, slow)
		}
		var str Message
		err := DecodeMessageString(string(b), &str)
		if err != nil || str.ID != fast.ID || str.Key != fast.Key || str.Unique != fast.Unique || str.Timeout != fast.Timeout ||
			str.EnqueuedAt != fast.EnqueuedAt || string(str.Payload) != string(fast.Payload) || str.Raw != fast.Raw {
			t.Fatalf("n=%d: from a string %+v, %v; from bytes %+v", n, str, err, fast)
		}
		for cut := 0; cut < len(b); cut += 997 {
			if decodeFast(b[:cut], &fast) || decodeFast(string(b[:cut]), &fast) {
				t.Fatalf("n=%d: fast path accepted a message truncated at %d", n, cut)
			}
		}
	}
	// a shorter array (ints as int64) is read by the fast path too, as the decoder reads it
	other := mustMarshal(t, []any{"id1", "", "type1", []byte("p"), false, int64(3)})
	var m Message
	if !decodeFast(other, &m) || m.MaxRetry != 3 || string(m.Payload) != "p" {
		t.Fatalf("fast path on a shorter array: %+v", m)
	}
	// laid out otherwise (a map): the fast path declines
	if decodeFast(mustMarshal(t, map[string]int{"a": 1}), &m) {
		t.Fatal("fast path accepted a map")
	}
	var fromStr Message
	if err := DecodeMessageString(string(other), &fromStr); err != nil || fromStr.ID != "id1" || fromStr.MaxRetry != 3 {
		t.Fatalf("fallback from a string: %+v, %v", fromStr, err)
	}
	got, err := DecodeMessage(other)
	if err != nil || got.ID != "id1" || got.MaxRetry != 3 {
		t.Fatalf("fallback: %+v, %v", got, err)
	}
}

func TestDecodeFastRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{{0x9b}, {0x9b, 0xa0}, {0x9b, 0xdb, 0xff, 0xff, 0xff, 0xff}, []byte("\xc1shardq:dummy")} {
		var m Message
		if decodeFast(b, &m) || decodeFast(string(b), &m) {
			t.Fatalf("fast path accepted % x", b)
		}
		if err := DecodeMessageString(string(b), new(Message)); err == nil {
			t.Fatalf("DecodeMessageString accepted % x", b)
		}
		if _, err := DecodeMessage(b); err == nil {
			t.Fatalf("DecodeMessage accepted % x", b)
		}
	}
}

// TestHeadID reads IDs the way include/msg_head.lua does: fix, 16- and 32-bit
// array headers, then a fix, 8- or 16-bit string that is not empty.
func TestHeadID(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		msg  string
		id   string
		good bool
	}{
		{"\x92\xa3abc\xa0", "abc", true},
		{"\xdc\x00\x02\xd9\x03abc", "abc", true},
		{"\xdd\x00\x00\x00\x02\xda\x01\x2c" + long, long, true},
		{"\x91\xdb\x00\x00\x00\x03abc", "", false}, // str32: the scripts do not read it
		{"\x91\xa0", "", false},                    // empty ID
		{"\x91\xa5ab", "", false},                  // truncated
		{"\xa3abc", "", false},                     // no array
		{"", "", false},
		{"\xdc\x00", "", false},
	} {
		id, ok := HeadID(c.msg)
		if id != c.id && c.good || ok != c.good {
			t.Errorf("HeadID(%q) = %q, %v; want %q, %v", c.msg, id, ok, c.id, c.good)
		}
	}
	m := &Message{ID: "01JD3Z8F0000000000AB", Key: "k", Type: "t", Payload: []byte("p")}
	if id, ok := HeadID(string(mustEncode(t, m))); !ok || id != m.ID {
		t.Fatalf("HeadID of an encoded message = %q, %v", id, ok)
	}
}

// TestCompactMessage: a plain task is written in the compact form, 5 bytes
// shorter than the full one; both forms decode to the same message through
// every decoder; any field the compact form leaves out, once set, makes
// the full form; a compact message cut inside its ID or type is refused.
func TestCompactMessage(t *testing.T) {
	id := NewID()
	at, _ := IDTime(id)
	plain := &Message{ID: id, Type: "bench", Payload: make([]byte, 100), Raw: true, MaxRetry: CompactMaxRetry, EnqueuedAt: at}
	b := mustEncode(t, plain)
	full := plain.AppendEncode(nil, true)
	if b[0] != 0x92 || len(b) != 124 || len(full) != 129 {
		t.Fatalf("a plain raw task: header %#x, %d bytes (full form %d); want 0x92, 124 (129)", b[0], len(b), len(full))
	}
	if mp := mustEncode(t, &Message{ID: id, Type: "bench", Payload: []byte{0x01}, MaxRetry: CompactMaxRetry}); mp[0] != 0x91 {
		t.Fatalf("a plain msgpack task: header %#x, want 0x91", mp[0])
	}
	if enc, _ := msgpack.Marshal(plain); string(enc) != string(full) {
		t.Fatalf("EncodeMsgpack does not write the full form:\n% x\n% x", enc, full)
	}
	same := func(got *Message) bool {
		return got.ID == id && got.Key == "" && got.Type == "bench" && len(got.Payload) == 100 && got.Raw &&
			got.MaxRetry == CompactMaxRetry && got.EnqueuedAt == at && got.Timeout == 0 && got.Unique == ""
	}
	for name, enc := range map[string][]byte{"compact": b, "full": full} {
		got, err := DecodeMessage(enc)
		if err != nil || !same(got) {
			t.Fatalf("%s: DecodeMessage %+v, %v", name, got, err)
		}
		var s Message
		if err := DecodeMessageString(string(enc), &s); err != nil || !same(&s) {
			t.Fatalf("%s: DecodeMessageString %+v, %v", name, s, err)
		}
		if hid, ok := HeadID(string(enc)); !ok || hid != id {
			t.Fatalf("%s: HeadID = %q, %v", name, hid, ok)
		}
	}
	// the payload is a copy, not a view of the message
	got, _ := DecodeMessage(b)
	b[len(b)-1] = 0xff
	if got.Payload[99] != 0 {
		t.Fatal("the decoded payload shares the message's bytes")
	}
	empty := mustEncode(t, &Message{ID: id, Type: "t", MaxRetry: CompactMaxRetry})
	if got, err := DecodeMessage(empty); err != nil || empty[0] != 0x91 || got.Payload != nil || got.Type != "t" {
		t.Fatalf("no payload: % x -> %+v, %v", empty, got, err)
	}

	for name, change := range map[string]func(m *Message){
		"key":              func(m *Message) { m.Key = "k" },
		"other MaxRetry":   func(m *Message) { m.MaxRetry = 0 },
		"timeout":          func(m *Message) { m.Timeout = 1 },
		"deadline":         func(m *Message) { m.Deadline = 1 },
		"retention":        func(m *Message) { m.Retention = 1 },
		"unique":           func(m *Message) { m.Unique = "u" },
		"headers":          func(m *Message) { m.Headers = map[string]string{"a": "b"} },
		"flow":             func(m *Message) { m.Flow = "c:x:1" },
		"own EnqueuedAt":   func(m *Message) { m.EnqueuedAt = at + 1 },
		"a caller's ID":    func(m *Message) { m.ID = "order-7" },
		"a caller's empty": func(m *Message) { m.ID, m.EnqueuedAt = "order-7", 0 },
	} {
		m := *plain
		change(&m)
		enc := mustEncode(t, &m)
		if wantCompact := name == "a caller's empty"; m.Compact() != wantCompact || (enc[0] <= 0x92) != wantCompact {
			t.Errorf("%s: Compact() = %v, header %#x", name, m.Compact(), enc[0])
		}
		if got, err := DecodeMessage(enc); err != nil || got.ID != m.ID || got.Key != m.Key || got.MaxRetry != m.MaxRetry ||
			got.Timeout != m.Timeout || got.Flow != m.Flow || got.EnqueuedAt != m.EnqueuedAt || len(got.Payload) != 100 {
			t.Errorf("%s: round trip %+v, %v", name, got, err)
		}
	}

	for cut := 0; cut < 1+17+6; cut++ { // inside the header, the ID or the type
		if _, err := DecodeMessage(b[:cut]); err == nil || !strings.Contains(err.Error(), "decode task message") {
			t.Errorf("cut at %d: err = %v", cut, err)
		}
		if err := DecodeMessageString(string(b[:cut]), new(Message)); err == nil {
			t.Errorf("cut at %d: DecodeMessageString accepted it", cut)
		}
	}
}

func TestStepsRoundTrip(t *testing.T) {
	in := Steps{{Name: "charge", At: 1764230000000, Result: []byte{0x01}}, {Name: "mail", At: 1764230000123}}
	b, err := EncodeSteps(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeSteps(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Name != "charge" || out[0].At != 1764230000000 || string(out[0].Result) != "\x01" ||
		out[1].Name != "mail" || len(out[1].Result) != 0 {
		t.Fatalf("round trip: %+v", out)
	}
	if out.Find("mail") == nil || out.Find("nope") != nil || out.Size() != 1 {
		t.Errorf("Find or Size wrong on %+v", out)
	}
	if s, err := DecodeSteps(nil); s != nil || err != nil {
		t.Errorf("DecodeSteps(nil) = %v, %v", s, err)
	}
	if _, err := DecodeSteps([]byte{0xc1}); err == nil {
		t.Error("DecodeSteps of garbage: no error")
	}
}

// TestAppendCompactHead: the compact head followed by the payload is the
// compact message; a message that is not compact, or full, has no head.
func TestAppendCompactHead(t *testing.T) {
	m := &Message{ID: NewID(), Type: "t", Payload: []byte(`{"a":1}`), Raw: true, MaxRetry: CompactMaxRetry}
	m.EnqueuedAt, _ = IDTime(m.ID)
	head, ok := m.AppendCompactHead([]byte("x"), false)
	if !ok {
		t.Fatal("a plain task has no compact head")
	}
	whole, _ := m.Encode()
	if got := append(head, m.Payload...); !bytes.Equal(got[1:], whole) || got[0] != 'x' {
		t.Fatalf("head+payload = %x, want x then %x", got, whole)
	}
	if _, ok := m.AppendCompactHead(nil, true); ok {
		t.Fatal("a compact head with full set")
	}
	m.Key = "k"
	if b, ok := m.AppendCompactHead([]byte("x"), false); ok || string(b) != "x" {
		t.Fatalf("a keyed task: %q, %v", b, ok)
	}
}
