package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableFits: a table wider than 80 columns cuts the columns that may
// be cut, widest first, and never an ID; columns with nothing in them
// drop out.
func TestTableFits(t *testing.T) {
	t.Parallel()
	id := "01a24fcf-1a9c-7a90-b515-f0cc31bbe59c"
	tb := newTable(column{head: "ID"}, column{head: "TYPE", cut: true}, column{head: "GROUP", cut: true, optional: true},
		num("ATTEMPTS"), column{head: "ERROR", cut: true, optional: true})
	tb.add(id, strings.Repeat("report:monthly:", 4), "-", "3", "dial tcp 10.0.0.7:443:\n  connect: connection refused after 30s")
	tb.add("short", "t", "-", "0", "-")
	var b bytes.Buffer
	tb.write(&b)
	out := b.String()
	fits(t, "table", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || strings.Contains(out, "GROUP") || !strings.Contains(lines[1], id) || !strings.Contains(lines[1], "…") ||
		!strings.Contains(lines[1], "dial tcp 10.0") {
		t.Fatalf("got:\n%s", out)
	}
	if w := len([]rune(lines[1])); w != termWidth {
		t.Fatalf("the cut line is %d columns, want all %d used:\n%s", w, termWidth, out)
	}
}
