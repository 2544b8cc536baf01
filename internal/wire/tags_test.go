package wire

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// tagged is a payload struct tagged for JSON: a renamed field, an
// omitempty one, one left out, an untagged one, one whose msgpack tag wins
// and a nested struct with a renamed field of its own.
type tagged struct {
	EnqueueNS int64    `json:"enqueue_ns"`
	Note      string   `json:"note,omitempty"`
	Secret    string   `json:"-"`
	Plain     string   // no tag: its name
	Both      int      `json:"both_json" msgpack:"both_mp"`
	Items     []inner  `json:"items"`
	Opt       *inner   `json:"opt,omitempty"`
	Tags      []string `json:",omitempty"` // no name: the field's
}

type inner struct {
	SKU string `json:"sku"`
	N   int
}

// keysOf returns the sorted keys of the msgpack map b holds.
func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]msgpack.RawMessage
	if err := Unmarshal(b, &m); err != nil {
		t.Fatalf("not a map: %v", err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestMarshalPayloadKeys: a struct is keyed by msgpack tags, else json
// tags, else names; json's "-" and omitempty hold; nested structs too.
func TestMarshalPayloadKeys(t *testing.T) {
	v := tagged{EnqueueNS: 7, Secret: "s", Plain: "p", Both: 2, Items: []inner{{SKU: "a", N: 1}}}
	b, err := MarshalPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, b), []string{"Plain", "both_mp", "enqueue_ns", "items"}; !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
	var m map[string]any
	if err := Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	items, _ := m["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("items = %#v", m["items"])
	}
	if got := keysOf(t, mustMarshal(t, items[0])); !slices.Equal(got, []string{"N", "sku"}) {
		t.Errorf("nested keys %q, want [N sku]", got)
	}
	v.Note, v.Tags = "n", []string{"x"}
	b, err = MarshalPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, b); !slices.Contains(got, "note") || !slices.Contains(got, "Tags") {
		t.Errorf("keys %q lack the omitempty fields that are set", got)
	}
}

// TestMarshalPayloadAsBefore: where no json tag renames anything, and for
// maps and scalars, MarshalPayload writes the bytes msgpack.Marshal
// (0.1.0's encoding) wrote. And it leaves no tag to the encoder pool.
// Each map has one key: Go ranges over a map in random order, so two
// encodings of a larger map need not agree byte for byte.
func TestMarshalPayloadAsBefore(t *testing.T) {
	type untagged struct {
		ID   string
		Tags []string
		M    map[string]int `msgpack:"m"`
		Same int            `json:"Same"`
	}
	for _, v := range []any{
		untagged{ID: "x", Tags: []string{"a"}, M: map[string]int{"k": 1}, Same: 3},
		map[string]any{"enqueue_ns": []any{1, "c", map[string]any{"b": true}}},
		"text", 42, nil, []byte{1, 2},
	} {
		got, err := MarshalPayload(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustMarshal(t, v); !bytes.Equal(got, want) {
			t.Errorf("%#v: % x, want % x", v, got, want)
		}
	}
	for range 10 {
		if got := keysOf(t, mustMarshal(t, tagged{})); !slices.Contains(got, "EnqueueNS") {
			t.Fatalf("msgpack.Marshal after MarshalPayload keys by json tags: %q", got)
		}
	}
}

// TestUnmarshalPayloadBothNamings: what MarshalPayload writes and what
// 0.1.0 wrote (msgpack.Marshal: field names) of the same value decode to
// that value, the field json leaves out as 0.1.0 wrote it.
func TestUnmarshalPayloadBothNamings(t *testing.T) {
	v := tagged{EnqueueNS: 1764230000123456789, Note: "n", Plain: "p", Both: 2,
		Items: []inner{{SKU: "a", N: 1}, {SKU: "b"}}, Opt: &inner{SKU: "o"}, Tags: []string{"t"}}
	now, err := MarshalPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	old := mustMarshal(t, v)
	for name, b := range map[string][]byte{"now": now, "0.1.0": old} {
		var got tagged
		if err := UnmarshalPayload(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := v
		if name == "now" {
			want.Secret = "" // json:"-": never written
		} else {
			want.Secret = "s"
			b = mustMarshal(t, want)
			got = tagged{}
			if err := UnmarshalPayload(b, &got); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", name, got, want)
		}
		var viaPayload tagged
		if err := DecodePayload(b, false, &viaPayload); err != nil || !reflect.DeepEqual(viaPayload, want) {
			t.Errorf("%s: DecodePayload = %+v, %v", name, viaPayload, err)
		}
	}
}

// TestUnmarshalPayloadFallback: the choice of naming when a payload fits
// neither exactly, what a caller put in v beforehand, and values that
// are not structs.
func TestUnmarshalPayloadFallback(t *testing.T) {
	type pair struct {
		A int `json:"a"`
		B int `json:"b"`
		C int
	}
	enc := func(m map[string]any) []byte { return mustMarshal(t, m) }
	cases := []struct {
		name string
		b    []byte
		want pair
	}{
		{"json names and a key the type lacks", enc(map[string]any{"a": 1, "b": 2, "new": 9}), pair{A: 1, B: 2}},
		{"field names and a key the type lacks", enc(map[string]any{"A": 1, "B": 2, "Gone": 9}), pair{A: 1, B: 2}},
		{"as many of each: json names", enc(map[string]any{"a": 1, "B": 2}), pair{A: 1}},
		{"an untagged field fits both", enc(map[string]any{"C": 3}), pair{C: 3}},
		{"a key the type lacks, alone", enc(map[string]any{"x": 1}), pair{}},
		{"a python producer's map", enc(map[string]any{"a": 1, "b": 2, "C": 3}), pair{A: 1, B: 2, C: 3}},
	}
	for _, c := range cases {
		var got pair
		if err := UnmarshalPayload(c.b, &got); err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	// a default the payload does not set survives the failed tries
	got := pair{C: 5}
	if err := UnmarshalPayload(enc(map[string]any{"A": 1, "B": 2}), &got); err != nil || got != (pair{A: 1, B: 2, C: 5}) {
		t.Errorf("into a value with a default: %+v, %v", got, err)
	}
	// a field of the wrong type is an error, as it was
	if err := UnmarshalPayload(enc(map[string]any{"a": "x"}), &got); err == nil {
		t.Error("a string into an int field: no error")
	}
	var a any
	if err := UnmarshalPayload(mustMarshal(t, tagged{EnqueueNS: 1}), &a); err != nil {
		t.Fatal(err)
	}
	if m, _ := a.(map[string]any); m == nil || m["EnqueueNS"] == nil {
		t.Errorf("into any: %#v, want the map as written", a)
	}
	// none of the keys fits: ErrPayloadMismatch, under either naming
	var p pair
	if err := DecodePayload(enc(map[string]any{"x": 1}), false, &p); !errors.Is(err, ErrPayloadMismatch) {
		t.Errorf("DecodePayload of no fitting key: %v", err)
	}
}

// TestRenames: which types decode both namings; a type that holds itself
// is looked at once.
func TestRenames(t *testing.T) {
	type self struct {
		Next *self
		Kids []self
	}
	type hidden struct {
		Keep int `json:"-" msgpack:"keep"`
		skip int
	}
	type embeds struct{ inner }
	for _, c := range []struct {
		v    any
		want bool
	}{
		{tagged{}, true},
		{[]map[string]*inner{}, true},
		{embeds{}, true},
		{self{}, false},
		{hidden{skip: 1}, false},
		{map[string]any{}, false},
		{struct {
			A int `json:"A,omitempty"`
		}{}, false},
		{0, false},
	} {
		if got := renames(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("renames(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestPayloadAllocations: MarshalPayload allocates as msgpack.Marshal
// does, and decoding what it wrote into a struct json tags rename
// allocates as Unmarshal does (the hot paths of NewTask and of
// worker.Typed). An omitempty option, json's or msgpack's, costs the
// encoder one more: msgpack filters the fields into a new slice.
func TestPayloadAllocations(t *testing.T) {
	type renamed struct {
		EnqueueNS int64   `json:"enqueue_ns"`
		Host      string  `json:"host"`
		Items     []inner `json:"items"`
	}
	v := renamed{EnqueueNS: 7, Host: "h1", Items: []inner{{SKU: "a"}}}
	enc := testing.AllocsPerRun(200, func() { _, _ = MarshalPayload(v) })
	base := testing.AllocsPerRun(200, func() { _, _ = msgpack.Marshal(v) })
	if enc != base {
		t.Errorf("MarshalPayload allocates %v times, msgpack.Marshal %v", enc, base)
	}
	b, err := MarshalPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	old := mustMarshal(t, v)
	dec := testing.AllocsPerRun(200, func() { var got renamed; _ = UnmarshalPayload(b, &got) })
	base = testing.AllocsPerRun(200, func() { var got renamed; _ = Unmarshal(old, &got) })
	if dec != base {
		t.Errorf("UnmarshalPayload allocates %v times, Unmarshal %v", dec, base)
	}
	t.Logf("allocs: MarshalPayload %v, UnmarshalPayload %v", enc, dec)
}
