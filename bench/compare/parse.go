package main

import (
	"bufio"
	"strconv"
	"strings"
)

// ratioKey names one of shardq's ratios: a figure against a peer.
type ratioKey struct{ figure, peer string }

// parseRatios reads the bench's report tables and returns, for each
// figure and each "shardq ÷ peer" column, shardq's value over the peer's,
// in the table's order. It divides the value cells, which carry more
// digits than the report's two-decimal ratio cells; a cell without a
// number ("no figure: …", "–") or a peer's zero gives no ratio.
func parseRatios(out string) ([]ratioKey, map[ratioKey]float64) {
	var keys []ratioKey
	vals := map[ratioKey]float64{}
	var cols map[string]int // system → column, in the current table
	var peers []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			cols = nil
			continue
		}
		cells := splitRow(line)
		if cells[0] == "figure" {
			cols, peers = map[string]int{}, nil
			for i, c := range cells {
				if a, peer, ok := strings.Cut(c, " ÷ "); ok && a == "shardq" {
					peers = append(peers, peer)
				} else {
					cols[c] = i
				}
			}
			continue
		}
		if cols == nil || strings.HasPrefix(cells[0], "---") {
			continue
		}
		own, ok := cellValue(cells, cols["shardq"])
		if !ok {
			continue
		}
		for _, peer := range peers {
			v, ok := cellValue(cells, cols[peer])
			if !ok || v == 0 {
				continue
			}
			k := ratioKey{cells[0], peer}
			if _, dup := vals[k]; !dup {
				keys = append(keys, k)
			}
			vals[k] = own / v
		}
	}
	return keys, vals
}

// cellValue is the number that opens cells[i]: a median, before its
// "(min–max)".
func cellValue(cells []string, i int) (float64, bool) {
	if i <= 0 || i >= len(cells) {
		return 0, false
	}
	f := strings.Fields(cells[i])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// splitRow returns a Markdown table row's cells, trimmed.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// nodeFigures are one BenchmarkWorkflow sub-benchmark's figures of a run.
type nodeFigures struct {
	plain, node float64 // Redis CPU µs per plain task and per node
}

// parseWorkflow reads go test -bench output and returns each
// BenchmarkWorkflow sub-benchmark's figures, by name without the
// GOMAXPROCS suffix, in order.
func parseWorkflow(out string) ([]string, map[string]nodeFigures) {
	var names []string
	figs := map[string]nodeFigures{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "BenchmarkWorkflow") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 && isDigits(name[i+1:]) {
			name = name[:i]
		}
		var nf nodeFigures
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "plain-redis-cpu-us/task":
				nf.plain = v
			case "node-redis-cpu-us/node":
				nf.node = v
			}
		}
		if nf.node == 0 {
			continue
		}
		if _, dup := figs[name]; !dup {
			names = append(names, name)
		}
		figs[name] = nf
	}
	return names, figs
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
