package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func doc(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"order":%d,"customer":"customer-%d","city":"Lisbon"},`, i*7919, i*31)
	}
	return []byte(b.String()[:n])
}

func TestRoundTrip(t *testing.T) {
	ring := &KeyRing{Current: "k2", Keys: map[string][]byte{"k1": key(1), "k2": key(2)}}
	values := [][]byte{nil, {}, []byte("x"), doc(100), doc(5000), {Magic}, {Magic, 0, 'a'}, append([]byte{Magic}, doc(3000)...)}
	for _, comp := range []Compression{Fast, Small, None} {
		for _, r := range []*KeyRing{nil, ring} {
			c := &Codec{Compression: comp, Above: 512, Ring: r}
			for _, v := range values {
				w, err := c.Wrap(nil, v, "id1", Payload)
				if err != nil {
					t.Fatal(err)
				}
				if r == nil && comp == None && len(v) > 0 && v[0] != Magic && !bytes.Equal(w, v) {
					t.Errorf("%v: a plain value was changed", comp)
				}
				if r != nil && !Wrapped(w) {
					t.Errorf("%v: not wrapped with a key ring", comp)
				}
				if r != nil && KeyID(w) != "k2" {
					t.Errorf("KeyID = %q, want k2", KeyID(w))
				}
				got, err := c.Open(w, "id1", Payload, 0)
				if err != nil {
					t.Fatalf("%v ring=%v len %d: %v", comp, r != nil, len(v), err)
				}
				if !bytes.Equal(got, v) {
					t.Fatalf("%v ring=%v: got %d bytes back, want %d", comp, r != nil, len(got), len(v))
				}
				s, err := c.WrapString(string(v), "id1", Step)
				if err != nil {
					t.Fatal(err)
				}
				back, err := c.OpenString(s, "id1", Step, 0)
				if err != nil || back != string(v) {
					t.Fatalf("string round trip: %v, %d bytes", err, len(back))
				}
			}
		}
	}
}

func TestCompresses(t *testing.T) {
	v := doc(4000)
	for _, comp := range []Compression{Fast, Small} {
		w, _ := (&Codec{Compression: comp, Above: 512}).Wrap(nil, v, "id", Payload)
		if len(w) >= len(v)/2 {
			t.Errorf("%v: %d bytes of %d: not compressed", comp, len(w), len(v))
		}
		small, _ := (&Codec{Compression: comp, Above: 512}).Wrap(nil, v[:511], "id", Payload)
		if !bytes.Equal(small, v[:511]) {
			t.Errorf("%v: a value under Above was changed", comp)
		}
	}
	// Incompressible bytes stay plain rather than grow.
	rnd := make([]byte, 2000)
	for i := range rnd {
		rnd[i] = byte(i*7919 + i*i*31)
	}
	if w, _ := (&Codec{Above: 1}).Wrap(nil, rnd, "id", Payload); len(w) > len(rnd) {
		t.Errorf("incompressible: %d bytes of %d", len(w), len(rnd))
	}
}

func TestOpenRefuses(t *testing.T) {
	old := &KeyRing{Current: "k1", Keys: map[string][]byte{"k1": key(1)}}
	c := &Codec{Ring: old}
	w, _ := c.Wrap(nil, []byte("card 4111 1111 1111 1111"), "id1", Payload)

	tampered := append([]byte(nil), w...)
	tampered[len(tampered)-20] ^= 1
	other := &Codec{Ring: &KeyRing{Current: "k9", Keys: map[string][]byte{"k9": key(9)}}}
	zipped, _ := (&Codec{Above: 1}).Wrap(nil, doc(3000), "id1", Payload)
	cases := []struct {
		name string
		c    *Codec
		b    []byte
		id   string
		u    Use
		want error
		says string
	}{
		{"tampered", c, tampered, "id1", Payload, ErrCorrupt, `"k1"`},
		{"another task", c, w, "id2", Payload, ErrCorrupt, "not this task's"},
		{"another use", c, w, "id1", Result, ErrCorrupt, "not this task's"},
		{"unknown key", other, w, "id1", Payload, ErrUnknownKey, `"k1"`},
		{"no key ring", &Codec{}, w, "id1", Payload, ErrUnknownKey, `"k1", and no key ring`},
		{"cut short", c, w[:10], "id1", Payload, ErrCorrupt, "cut short"},
		{"unknown flags", &Codec{}, []byte{Magic, 0x40, 1}, "id1", Payload, ErrCorrupt, "flags"},
		{"unknown sealed flags", c, []byte{Magic, 0x44, 1}, "id1", Payload, ErrCorrupt, "flags"},
		{"bad s2", &Codec{}, []byte{Magic, codecS2, 0xff, 0xff, 0xff}, "id1", Payload, ErrCorrupt, "s2"},
		{"bad zstd", &Codec{}, []byte{Magic, codecZstd, 1, 2, 3}, "id1", Payload, ErrCorrupt, "zstd"},
		{"past the limit", &Codec{}, zipped, "id1", Payload, ErrTooLarge, "limit 1000"},
		{"plain under a ring", c, []byte("card"), "id1", Payload, ErrPlaintext, "a plain value of 4 bytes"},
		{"compressed under a ring", c, zipped, "id1", Payload, ErrPlaintext, "flags 0x1, without the encrypted flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := 0
			if tc.want == ErrTooLarge {
				limit = 1000
			}
			_, err := tc.c.Open(tc.b, tc.id, tc.u, limit)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Open = %v, want %v saying %s", err, tc.want, tc.says)
			}
		})
	}
	// The old key, kept in a newer ring, still opens it.
	rotated := &Codec{Ring: &KeyRing{Current: "k2", Keys: map[string][]byte{"k1": key(1), "k2": key(2)}}}
	if got, err := rotated.Open(w, "id1", Payload, 0); err != nil || string(got) != "card 4111 1111 1111 1111" {
		t.Fatalf("rotated ring: %q, %v", got, err)
	}
}

func TestKeyRingCheck(t *testing.T) {
	for _, tc := range []struct {
		r    *KeyRing
		says string
	}{
		{&KeyRing{}, "no Current"},
		{&KeyRing{Current: "a", Keys: map[string][]byte{"b": key(1)}}, `"a" is not among`},
		{&KeyRing{Current: "a", Keys: map[string][]byte{"a": key(1)[:16]}}, "16 bytes, want 32"},
		{&KeyRing{Current: "a", Keys: map[string][]byte{"a": key(1), strings.Repeat("x", 256): key(2)}}, "want 1 to 255"},
	} {
		if err := tc.r.Check(); !errors.Is(err, ErrInvalidKeyRing) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Check = %v, want %s", err, tc.says)
		}
	}
}

func TestParseKeyRing(t *testing.T) {
	r, err := ParseKeyRing([]byte(`{"current":"b","keys":{"a":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","b":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Current != "b" || !bytes.Equal(r.Keys["a"], key(1)) || !bytes.Equal(r.Keys["b"], key(2)) {
		t.Fatalf("parsed %+v", r)
	}
	for in, says := range map[string]string{
		`{`:                                   "not JSON",
		`{"current":"a","keys":{"a":"!!"}}`:   "base64",
		`{"current":"a","keys":{"a":"AQID"}}`: "3 bytes, want 32",
		`{"current":"x","keys":{}}`:           "not among",
	} {
		if _, err := ParseKeyRing([]byte(in)); !errors.Is(err, ErrInvalidKeyRing) || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseKeyRing(%s) = %v, want %s", in, err, says)
		}
	}
}

func TestDict(t *testing.T) {
	var sample []byte
	for i := range 40 {
		sample = append(sample, doc(700+i)...)
	}
	d := NewDict(sample)
	if d == nil || len(d.ID) != 2*DictIDSize {
		t.Fatalf("NewDict: %+v", d)
	}
	stored := map[string][]byte{d.ID: d.Bytes}
	loads := 0
	dicts := &Dicts{Load: func(id string) ([]byte, error) { loads++; return stored[id], nil }}
	c := &Codec{Above: 512, Dicts: dicts}
	v := doc(900)
	w, err := c.WrapDict(nil, v, d, "id", Payload)
	if err != nil || DictID(w) != d.ID {
		t.Fatalf("WrapDict: %v, dictionary %q", err, DictID(w))
	}
	plain, _ := c.Wrap(nil, v, "id", Payload)
	if len(w) >= len(plain) {
		t.Fatalf("against the dictionary %d bytes, alone %d", len(w), len(plain))
	}
	for range 2 {
		got, err := c.Open(w, "id", Payload, 0)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Open: %v", err)
		}
	}
	if loads != 1 {
		t.Fatalf("the dictionary was loaded %d times, want once", loads)
	}
	// Under a key ring, or for a small value, no dictionary.
	for _, cc := range []*Codec{{Above: 512, Ring: &KeyRing{Current: "k", Keys: map[string][]byte{"k": key(1)}}}, {Above: 5000}} {
		if w, _ := cc.WrapDict(nil, v, d, "id", Payload); DictID(w) != "" {
			t.Fatal("a dictionary under a key ring, or below Above")
		}
	}
	// A dictionary Redis does not hold, one that cannot be read, one
	// stored wrong.
	for _, tc := range []struct {
		load func(string) ([]byte, error)
		want error
	}{
		{func(string) ([]byte, error) { return nil, nil }, ErrNoDict},
		{func(string) ([]byte, error) { return nil, errors.New("connection refused") }, ErrDictUnavailable},
		{func(string) ([]byte, error) { return NewDict(doc(3000)).Bytes, nil }, ErrCorrupt},
	} {
		cc := &Codec{Dicts: &Dicts{Load: tc.load}}
		if _, err := cc.Open(w, "id", Payload, 0); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), d.ID) {
			t.Errorf("Open = %v, want %v naming %s", err, tc.want, d.ID)
		}
	}
	if _, err := (&Codec{}).Open(w, "id", Payload, 0); !errors.Is(err, ErrDictUnavailable) {
		t.Errorf("Open without Dicts = %v", err)
	}
	if _, err := c.Open(w, "id", Payload, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Open past the limit = %v", err)
	}
}
