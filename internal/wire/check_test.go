package wire

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// bombs are msgpack values whose headers claim far more than their bytes
// hold: before Check, decoding any of them into any, a slice or a map
// ended the process (out of memory) or cost gigabytes. want is in the
// error.
var bombs = []struct {
	name string
	b    []byte
	want string
}{
	{"array32", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, "array at byte 0 claims 4294967295 elements; 0 bytes remain"},
	{"map32", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "map at byte 0 claims 4294967295 entries; 0 bytes remain"},
	{"map32 of 1e8", []byte{0xdf, 0x05, 0xf5, 0xe1, 0x00}, "claims 100000000 entries"},
	{"array16 short", []byte{0xdc, 0xff, 0xff, 1, 2, 3}, "array at byte 0 claims 65535 elements; 3 bytes remain"},
	// every header fits the bytes after it, but not with what the
	// headers around it need too
	{"nested", []byte{0x92, 0xdd, 0, 0, 0, 4, 1, 2, 3, 4}, "array at byte 1 claims 4 elements; 4 bytes remain, and the values after it need 1 of them"},
	{"in a map", []byte{0x81, 0xa1, 'k', 0xdd, 0xff, 0xff, 0xff, 0xff}, "array at byte 3 claims 4294967295 elements"},
	{"str32", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, "str at byte 0 claims 4294967295 bytes; 1 remain"},
	{"bin32", []byte{0xc6, 0xff, 0xff, 0xff, 0xff, 'a'}, "bin at byte 0 claims 4294967295 bytes; 1 remain"},
	{"ext32", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 1, 'a'}, "ext at byte 0 claims 4294967295 bytes; 1 remain"},
	{"bin32 in a struct", []byte{0x81, 0xa1, 'B', 0xc6, 0x7f, 0xff, 0xff, 0xff}, "bin at byte 3 claims 2147483647 bytes"},
	// a timestamp whose body reads as a map header claiming 2^32-1
	// entries, followed by a map that claims more than is there
	{"ext body", []byte{0xd7, 0x05, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}, "ext of type 5 at byte 0: its 8-byte body opens with a map header (0xdf)"},
	{"ext8 empty, then a map", []byte{0x92, 0xc7, 0x00, 0x05, 0xdf, 0, 0, 0, 0}, "ext of type 5 at byte 1: its 0-byte body opens with a map header (0xdf)"},
	{"deep", append(bytes.Repeat([]byte{0x91}, MaxDepth+1), 0), "nests deeper than 10000 levels"},
	{"too few elements", []byte{0x93, 1, 2}, "array at byte 0 claims 3 elements; 2 bytes remain"},
	{"number cut short", []byte{0x92, 0xcd, 1}, "number at byte 1 is cut short: 1 of its 2 bytes"},
	{"element missing", []byte{0x92, 0xa1, 'a'}, "str at byte 1 claims 1 bytes; 1 bytes remain, and the values after it need 1 of them"},
	{"never used", []byte{0xc1}, "byte 0xc1 at byte 0 starts no value"},
	{"empty", nil, "no bytes"},
	{"length cut short", []byte{0xdd, 0xff}, "array at byte 0: its length is cut short (1 of 4 bytes)"},
}

// payloadTarget is a struct with what a handler's payload type has:
// slices, maps, nested structs, a time.
type payloadTarget struct {
	Name  string            `msgpack:"name"`
	Tags  []string          `msgpack:"tags"`
	IDs   []int64           `msgpack:"ids"`
	Attrs map[string]any    `msgpack:"attrs"`
	Lists map[string][]int  `msgpack:"lists"`
	Sub   []payloadTarget   `msgpack:"sub"`
	Bin   []byte            `msgpack:"bin"`
	At    time.Time         `msgpack:"at"`
	Hdrs  map[string]string `msgpack:"hdrs"`
}

// targets returns fresh values of every kind a payload is decoded into.
func targets() []any {
	var a any
	var s []any
	var m map[string]any
	var mm map[any]any
	var ints []int
	var st payloadTarget
	var tm time.Time
	var tg tagged // json tags: the decode that tries both namings
	return []any{&a, &s, &m, &mm, &ints, &st, &tm, &tg}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCheckRefusesBombs: each bomb is ErrMalformed naming its length and
// offset, through Check and Unmarshal into every target, and decoding it
// allocates next to nothing (before: gigabytes, or the process died).
func TestCheckRefusesBombs(t *testing.T) {
	for _, c := range bombs {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.b)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(% x) = %v, want ErrMalformed with %q", c.b[:min(len(c.b), 12)], err, c.want)
			}
			for _, v := range targets() {
				var err error
				if n := allocated(func() { err = Unmarshal(c.b, v) }); n > 1<<20 {
					t.Errorf("Unmarshal into %T allocated %d bytes", v, n)
				}
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("Unmarshal into %T: %v, want ErrMalformed", v, err)
				}
				if err := DecodePayload(c.b, false, v); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("DecodePayload into %T: %v, want ErrMalformed with %q", v, err, c.want)
				}
			}
		})
	}
}

// TestCheckAcceptsWhatMsgpackWrites: every value msgpack's encoder
// writes passes Check and decodes through Unmarshal as through
// msgpack.Unmarshal.
func TestCheckAcceptsWhatMsgpackWrites(t *testing.T) {
	big := strings.Repeat("x", 70_000)
	values := []any{
		nil, true, false, 0, 1, -1, -33, 127, 128, 255, 256, 65535, 65536, math.MaxInt64, math.MinInt64, uint64(math.MaxUint64),
		1.5, float32(2.5), math.NaN(), "", "a", strings.Repeat("y", 40), strings.Repeat("z", 300), big,
		[]byte{}, []byte{1, 2, 3}, make([]byte, 300), make([]byte, 70_000),
		[]any{}, []any{1, "a", nil}, make([]int, 20), make([]int, 70_000),
		map[string]any{}, map[string]any{"a": 1, "b": []any{map[string]any{"c": "d"}}},
		map[int]string{1: "a", 2: "b"},
		payloadTarget{Name: "n", Tags: []string{"a"}, IDs: []int64{1, 2}, Attrs: map[string]any{"x": 1.5},
			Lists: map[string][]int{"l": {1, 2}}, Sub: []payloadTarget{{Name: "s"}}, Bin: []byte{0xc1}, At: time.Unix(1764230000, 987_654_321),
			Hdrs: map[string]string{"h": "v"}},
		time.Unix(0, 0), time.Unix(1<<31, 0), time.Unix(1764230000, 550_000_000), time.Unix(1764230000, 935_000_000),
		time.Unix(1<<40, 806_000_000), time.Unix(-5, 1),
	}
	for _, v := range values {
		b := mustMarshal(t, v)
		if err := Check(b); err != nil {
			t.Errorf("Check(%T % x): %v", v, b[:min(len(b), 16)], err)
			continue
		}
		var want, got any
		werr := msgpack.Unmarshal(b, &want)
		gerr := Unmarshal(b, &got)
		if (werr == nil) != (gerr == nil) || !sameEncoding(t, want, got) {
			t.Errorf("%T: Unmarshal = %v, %v; msgpack.Unmarshal = %v, %v", v, got, gerr, want, werr)
		}
	}
	// trailing bytes are not read, as msgpack.Unmarshal does not read them
	if err := Check([]byte{0x01, 0xc1, 0xdd}); err != nil {
		t.Errorf("trailing bytes: %v", err)
	}
	// a map as deep as allowed
	deep := append(bytes.Repeat([]byte{0x91}, MaxDepth), 0)
	var v any
	if err := Unmarshal(deep, &v); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
}

// sameEncoding reports whether a and b encode alike, maps sorted.
func sameEncoding(t *testing.T, a, b any) bool {
	t.Helper()
	return bytes.Equal(canonical(t, a), canonical(t, b))
}

// canonical encodes v with its maps' keys sorted. msgpack sorts only
// maps of a few types (string to bool, string or any), and writes others
// (map[string]int) in Go's random map order: so v is encoded, read back
// as any (string-keyed maps become map[string]any), and encoded again
// sorted. Two equal values then encode alike every time.
func canonical(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	var generic any
	if err := msgpack.Unmarshal(b, &generic); err != nil { // wire:unchecked: bytes this test encoded
		t.Fatalf("read back %T: %v", v, err)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(generic); err != nil {
		t.Fatalf("encode %T sorted: %v", v, err)
	}
	return buf.Bytes()
}

// TestTimestampReadAsMap: msgpack's decoder reads past an extension's
// header where it wants a map, so a timestamp whose body opens with a map
// header decoded into a map made a map of what the body claims (here 2^32-1
// entries: before, the process died). Such a timestamp decodes the same
// through Unmarshal, rewritten in the 12-byte form, and is an error
// decoded into a map.
func TestTimestampReadAsMap(t *testing.T) {
	trap := []byte{0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}
	var want time.Time
	if err := msgpack.Unmarshal(trap, &want); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := Unmarshal(trap, &got); err != nil || !got.Equal(want) {
		t.Fatalf("Unmarshal into time.Time = %v, %v; want %v", got, err, want)
	}
	norm, err := Normalize(trap)
	if err != nil || len(norm) != 15 || norm[0] != 0xc7 || norm[1] != 12 || norm[2] != 0xff || norm[3] >= 0x40 {
		t.Fatalf("Normalize = % x, %v: want a 12-byte timestamp", norm, err)
	}
	if err := Check(norm); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{new(map[string]any), new(map[string][]int), new(map[any]any), new(payloadTarget)} {
		var err error
		if n := allocated(func() { err = Unmarshal(trap, v) }); n > 1<<20 {
			t.Errorf("into %T: allocated %d bytes", v, n)
		}
		if err == nil {
			t.Errorf("a timestamp decoded into %T", v)
		}
	}
	// inside a struct's map field, and among other values: the rest is
	// copied as it is
	wrapped := append(append([]byte{0x82, 0xa4, 'h', 'd', 'r', 's'}, trap...), 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'x')
	var st payloadTarget
	if err := Unmarshal(wrapped, &st); err == nil {
		t.Errorf("a timestamp decoded into a map field: %+v", st)
	}
	var loose map[string]any
	if err := Unmarshal(wrapped, &loose); err != nil || !loose["hdrs"].(time.Time).Equal(want) || loose["name"] != "x" {
		t.Errorf("into map[string]any: %v, %v", loose, err)
	}
	// times of every nanosecond range survive, whatever their first byte
	for ns := int64(0); ns < 1e9; ns += 3_999_999 {
		for _, sec := range []int64{1764230000, 1 << 31, 1 << 35, -1} {
			tm := time.Unix(sec, ns)
			var back time.Time
			if err := Unmarshal(mustMarshal(t, tm), &back); err != nil || !back.Equal(tm) {
				t.Fatalf("%v: %v, %v", tm, back, err)
			}
		}
	}
}

// TestExtWholeMapBody: an extension whose body is exactly one map reads
// the same either way, so it passes; one whose body opens a map that
// runs past it does not.
func TestExtWholeMapBody(t *testing.T) {
	body := mustMarshal(t, map[string]int{"a": 1})
	ok := append([]byte{0xc7, byte(len(body)), 7}, body...)
	if err := Check(ok); err != nil {
		t.Fatalf("ext of one whole map: %v", err)
	}
	short := append([]byte{0xc7, byte(len(body) - 1), 7}, body...)
	if err := Check(short); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ext whose map runs past it: %v", err)
	}
	if err := Check([]byte{0xd4, 7, 0xc0}); err != nil {
		t.Fatalf("fixext1 holding nil: %v", err)
	}
	if err := Check([]byte{0xd4, 7, 0x01}); err != nil {
		t.Fatalf("fixext1 of a byte that opens no map: %v", err)
	}
}

// TestUnmarshalPanicIsError: a map key Go cannot hash panics in msgpack's
// decoder; Unmarshal returns it as an error.
func TestUnmarshalPanicIsError(t *testing.T) {
	b := []byte{0x82, 0x01, 0x01, 0x91, 0x01, 0x02} // {1: 1, [1]: 2}
	var m map[any]any
	if err := Unmarshal(b, &m); err == nil || !strings.Contains(err.Error(), "decode into") {
		t.Fatalf("Unmarshal = %v", err)
	}
	var st struct{ M map[any]any }
	if err := DecodePayload(append([]byte{0x81, 0xa1, 'M'}, b...), false, &st); err == nil {
		t.Fatal("DecodePayload: no error")
	}
}

// TestDecodersRefuseBombs: the decoders of what Redis holds refuse the
// bombs with ErrMalformed, in their fields too, and allocate next to
// nothing doing it.
func TestDecodersRefuseBombs(t *testing.T) {
	arr := []byte{0xdd, 0xff, 0xff, 0xff, 0xff}
	id := NewID()
	// a full message of 12 fields: its headers a map claiming 2^32-1
	// entries (the fast decoder made a map of that many), or its payload a
	// bin32 claiming 4 GiB (the general decoder made a slice of that many)
	hdrBomb := append(append([]byte{0x9c}, mustMarshal(t, id)...), 0xa0, 0xa1, 't', 0xc4, 0, 0xc2, 0, 0, 0, 0, 0xa0, 0)
	hdrBomb = append(hdrBomb, 0xdf, 0xff, 0xff, 0xff, 0xff)
	binBomb := append(append([]byte{0x94}, mustMarshal(t, id)...), 0xa0, 0xa1, 't', 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2)
	message := func(b []byte) error { _, err := DecodeMessage(b); return err }
	record := func(b []byte) error { _, err := DecodeRecord(b); return err }
	steps := func(b []byte) error { _, err := DecodeSteps(b); return err }
	cases := []struct {
		name   string
		decode func([]byte) error
		b      []byte
	}{
		{"message headers", message, hdrBomb},
		{"message string", func(b []byte) error { var m Message; return DecodeMessageString(string(b), &m) }, hdrBomb},
		{"message payload", message, binBomb},
		{"message", message, arr},
		{"record", record, arr},
		{"record field", record, []byte{0x92, 0xa1, 'a', 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"steps", steps, arr},
		{"step value", steps, []byte{0x91, 0x81, 0xa1, 'v', 0xc6, 0xff, 0xff, 0xff, 0xff}},
		{"progress", func(b []byte) error { _, err := DecodeProgress(b); return err }, []byte{0x81, 0xa1, 'm', 0xdb, 0xff, 0xff, 0xff, 0xff}},
		{"worker status", func(b []byte) error { _, err := DecodeWorkerStatus(b); return err }, []byte{0x81, 0xa1, 'q', 0xdf, 0xff, 0xff, 0xff, 0xff}},
		{"delivery", func(b []byte) error { _, err := DecodeDelivery(b); return err }, []byte{0x95, 0xa1, 'q', 0, 0, 0xa1, 'i', 0xc6, 0xff, 0xff, 0xff, 0xff}},
		{"flow note", func(b []byte) error { _, err := DecodeFlowNote(b); return err }, arr},
		{"decoder", func(b []byte) error { _, err := NewDecoder(b); return err }, arr},
	}
	for _, c := range cases {
		var err error
		if n := allocated(func() { err = c.decode(c.b) }); n > 1<<20 {
			t.Errorf("%s: allocated %d bytes", c.name, n)
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
}

// TestCheckAllocatesNothing: the walk of a well-formed value allocates
// nothing, nor does one of a timestamp whose body reads as a map header
// (its body is walked as a map first, and fails quietly).
func TestCheckAllocatesNothing(t *testing.T) {
	for _, at := range []time.Time{time.Unix(1764230000, 0), time.Unix(1764230000, 123_000_000), time.Unix(1764230000, 935_000_000)} {
		b := mustMarshal(t, payloadTarget{Name: "n", Tags: []string{"a", "b"}, Attrs: map[string]any{"x": []any{1, "y"}}, At: at})
		if n := testing.AllocsPerRun(100, func() { _ = Check(b) }); n != 0 {
			t.Errorf("Check of a value with the time %v allocates %v times", at, n)
		}
	}
}

// TestRawPayloadDepth: a raw payload is JSON, which encoding/json bounds
// by its bytes and nests at most 10,000 deep.
func TestRawPayloadDepth(t *testing.T) {
	deep := []byte(strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001))
	for _, v := range targets() {
		if err := DecodePayload(deep, true, v); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
			t.Errorf("into %T: %v", v, err)
		}
	}
}
