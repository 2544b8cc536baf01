package layout

import "testing"

func TestParse(t *testing.T) {
	good := map[string]Layout{"1/1": {1, 1}, "2/4": {2, 4}, "4/4": {4, 4}}
	for v, want := range good {
		got, err := Parse(v)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", v, got, err, want)
		}
		if got.String() != v {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), v)
		}
	}
	for _, v := range []string{"", "4", "0/1", "3/2", "a/b", "2/", "/2", "-1/2"} {
		if _, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", v)
		}
	}
	if !(Layout{2, 4}).Draining() || (Layout{4, 4}).Draining() {
		t.Error("Draining is wrong")
	}
}
