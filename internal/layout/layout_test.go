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
	for _, v := range []string{"", "4", "0/1", "3/2", "a/b", "2/", "/2", "-1/2", "1/1025", "1/2000000000", "1/99999999999999999999", "+2/4", "2/+4", " 2/4"} {
		if _, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", v)
		}
	}
	if !(Layout{2, 4}).Draining() || (Layout{4, 4}).Draining() {
		t.Error("Draining is wrong")
	}
}

// TestParseCount: a registry value is a count of 1 to 1,024 partitions;
// one past it (a registry value of 2e9 once sized a pipeline of 2e9
// commands in Inspector.QueueInfos) is refused.
func TestParseCount(t *testing.T) {
	for v, want := range map[string]int{"1": 1, "16": 16, "1024": 1024} {
		if got, err := ParseCount(v); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "0", "-1", "1025", "2000000000", "x", "1/1", "+3", " 3"} {
		if n, err := ParseCount(v); err == nil {
			t.Errorf("ParseCount(%q) = %d, want an error", v, n)
		}
	}
}

// FuzzParse: a stored layout or registry value parses to counts of 1 to
// 1,024 or is an error; a layout that parses prints as what parses to it.
func FuzzParse(f *testing.F) {
	for _, v := range []string{"1/1", "2/4", "1/2000000000", "4294967295", "1024", "0", "3/2"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if l, err := Parse(v); err == nil {
			if l.Route < 1 || l.Serve < l.Route || l.Serve > 1024 {
				t.Fatalf("Parse(%q) = %v", v, l)
			}
			if back, err := Parse(l.String()); err != nil || back != l {
				t.Fatalf("Parse(%q) = %v, %v", l.String(), back, err)
			}
		}
		if n, err := ParseCount(v); err == nil && (n < 1 || n > 1024) {
			t.Fatalf("ParseCount(%q) = %d", v, n)
		}
	})
}
