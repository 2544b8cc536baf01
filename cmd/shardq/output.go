package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// termWidth is the width tables fit: an 80-column terminal, the narrowest
// an operator's is likely to be. --output json has every field in full.
const termWidth = 80

// outputFlag is --output (-o): "table", the default, or "json".
type outputFlag struct{ format string }

// add registers --output and its short form -o.
func (o *outputFlag) add(fs *flags) {
	const help = "how to print: table (fits 80 columns) or json (every field, for scripts)"
	fs.StringVar(&o.format, "output", "table", help)
	fs.StringVar(&o.format, "o", "table", "short for --output")
}

// check refuses a format other than table and json.
func (o *outputFlag) check() error {
	if o.format != "table" && o.format != "json" {
		return usageErr("--output %q: want table or json", o.format)
	}
	return nil
}

func (o *outputFlag) json() bool { return o.format == "json" }

// writeJSON prints v indented, as the dashboard's API does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// column is one column of a table: its header, and whether its cells may
// be cut to fit the width (an error text may; an ID, which operators
// paste into the next command, may not).
type column struct {
	head  string
	cut   bool
	right bool // numbers align right
	// optional drops the column when every cell is "-", "0" or empty: a
	// listing of tasks without groups has no GROUP column.
	optional bool
}

// table is rows under columns, printed aligned within termWidth.
type table struct {
	cols []column
	rows [][]string
}

func newTable(cols ...column) *table { return &table{cols: cols} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table. When it is wider than termWidth, the widest
// column that may be cut loses width first, down to its header's, and a
// cut cell ends in "…".
func (t *table) write(w io.Writer) {
	t.dropEmpty()
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = utf8.RuneCountInString(c.head)
	}
	for _, r := range t.rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(oneLine(cell)))
		}
	}
	for total(widths) > termWidth {
		widest := -1
		for i, c := range t.cols {
			if c.cut && widths[i] > max(len(c.head), 4) && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break // only columns that must stay whole are left
		}
		widths[widest]--
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, cell := range cells {
			cell = fit(oneLine(cell), widths[i])
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if t.cols[i].right {
				b.WriteString(pad + cell)
			} else {
				b.WriteString(cell + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	heads := make([]string, len(t.cols))
	for i, c := range t.cols {
		heads[i] = c.head
	}
	line(heads)
	for _, r := range t.rows {
		line(r)
	}
}

// dropEmpty removes the optional columns that hold nothing.
func (t *table) dropEmpty() {
	for i := len(t.cols) - 1; i >= 0; i-- {
		if !t.cols[i].optional {
			continue
		}
		empty := true
		for _, r := range t.rows {
			if r[i] != "" && r[i] != "-" && r[i] != "0" {
				empty = false
				break
			}
		}
		if !empty {
			continue
		}
		t.cols = slices.Delete(t.cols, i, i+1)
		for j, r := range t.rows {
			t.rows[j] = slices.Delete(r, i, i+1)
		}
	}
}

// total is the width of a line of columns this wide, two spaces apart.
func total(widths []int) int {
	n := 2 * (len(widths) - 1)
	for _, w := range widths {
		n += w
	}
	return n
}

// fit cuts s to n runes, marking a cut with "…".
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// oneLine keeps a cell on its row: an error's newlines become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// wrap breaks s into lines of at most width runes between words; a word
// longer than width gets a line of its own.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		l := utf8.RuneCountInString(word)
		if n > 0 && n+1+l > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}
