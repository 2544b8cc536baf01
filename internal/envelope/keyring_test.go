package envelope

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"
)

const (
	keyA = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="
	keyB = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="
)

// TestParseKeyRingRefuses: a ring file with a field ParseKeyRing does not
// know is refused naming the field (a typo gave "no Current key ID"), and
// no refusal quotes a key, not even one character of it.
func TestParseKeyRingRefuses(t *testing.T) {
	for in, says := range map[string]string{
		`{"curent":"a","keys":{"a":"` + keyA + `"}}`:                         `unknown field "curent"`,
		`{"current":"a","keys":{"a":"` + keyA + `"},"rotate":"monthly"}`:     `unknown field "rotate"`,
		`{"current":"a","keys":{"a":"` + keyA + `"}} {"current":"b"}`:        "more JSON after",
		`{"current":"a","keys":{"a":` + strings.TrimSuffix(keyA, "=") + `}}`: "syntax error at byte 28",
		`{"current":"a","keys":{"a":["` + keyA + `"]}}`:                      `field "keys" holds a JSON array, want string`,
		`{"current":"a","keys":{"a":"` + keyA + `"`:                          "ends before",
		``: "ends before",
	} {
		_, err := ParseKeyRing([]byte(in))
		if !errors.Is(err, ErrInvalidKeyRing) || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseKeyRing(%s) = %v, want one that says %s", in, err, says)
		}
		if err != nil && strings.Contains(err.Error(), "AQEB") {
			t.Errorf("ParseKeyRing(%s) = %v: quotes the key", in, err)
		}
	}
}

// FuzzParseKeyRing: no input crashes ParseKeyRing or makes it quote a
// key in its error; a ring it accepts is checked (its Current key is in
// it, every key is 32 bytes) and holds what the input's base64 says.
func FuzzParseKeyRing(f *testing.F) {
	f.Add(`{"current":"a","keys":{"a":"` + keyA + `","b":"` + keyB + `"}}`)
	f.Add(`{"curent":"a","keys":{"a":"` + keyA + `"}}`)
	f.Add(`{"current":"a","keys":{"a":` + keyA + `}}`)
	f.Add(`{"current":"","keys":{"":"` + keyA + `"}}`)
	f.Add(`{"current":"a","keys":{"a":"AQID"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseKeyRing([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrInvalidKeyRing) {
				t.Fatalf("ParseKeyRing(%q): %v does not wrap ErrInvalidKeyRing", in, err)
			}
			// a key's text may be quoted only where the input uses it as an ID
			for _, k := range []string{keyA, keyB, keyA[:8], keyB[:8]} {
				asID := regexp.MustCompile(`(?i)"current"\s*:\s*"[^"]*` + k + `|"[^"]*` + k + `[^"]*"\s*:`)
				if strings.Contains(err.Error(), k) && !asID.MatchString(in) {
					t.Fatalf("ParseKeyRing(%q): %v quotes a key", in, err)
				}
			}
			return
		}
		if r.Check() != nil || r.Keys[r.Current] == nil {
			t.Fatalf("ParseKeyRing(%q) accepted a ring that does not check: %+v", in, r)
		}
		for id, k := range r.Keys {
			if len(k) != 32 || !strings.Contains(in, base64.StdEncoding.EncodeToString(k)[:8]) && !strings.Contains(in, `\u`) {
				t.Fatalf("ParseKeyRing(%q): key %q is %d bytes, not from the input", in, id, len(k))
			}
		}
	})
}
