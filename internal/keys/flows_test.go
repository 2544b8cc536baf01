package keys

import "testing"

// TestShortID: a UUID's short form is 22 characters without a colon and
// reads back; anything else is left as it is.
func TestShortID(t *testing.T) {
	id := "0190a0a0-1234-7000-8abc-def012345678"
	s := ShortID(id)
	if len(s) != 22 || LongID(s) != id {
		t.Fatalf("ShortID(%q) = %q, LongID = %q", id, s, LongID(s))
	}
	for _, c := range s {
		if c == ':' {
			t.Fatalf("short ID %q has a colon", s)
		}
	}
	for _, other := range []string{"", "not-a-uuid", "0190a0a0123470008abcdef012345678", "abcdefghijklmnopqrstu!"} {
		if ShortID(other) != other || LongID(other) != other {
			t.Fatalf("%q changed: %q, %q", other, ShortID(other), LongID(other))
		}
	}
	if h := Home("p", 3); h.Workflow(id) != "{p:flows:3}:w:"+s {
		t.Fatalf("workflow key %q", h.Workflow(id))
	}
}
