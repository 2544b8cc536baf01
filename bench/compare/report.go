package main

import (
	"fmt"
	"github.com/shardq/shardq/bench/internal/roundstat"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report prints the two tables, old beside new, and what is flagged.
func report(w io.Writer, o options, oldB, newB *build, old, cur *samples, took time.Duration) {
	fmt.Fprintf(w, "\nold: %s; new: %s; %d round(s) each, interleaved; %d CPUs; %s, %v\n",
		oldB.label, newB.label, o.rounds, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	if o.quick {
		fmt.Fprintln(w, "-quick: small sizes; the figures only show that the comparison runs")
	}

	fmt.Fprintf(w, "\nshardq ÷ peer, from the value cells, median of the rounds; flagged beyond ±%g %%\n\n", o.tolerance)
	fmt.Fprintln(w, "| figure | peer | old | new | change | |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	keys := roundstat.Union(old.ratioKeys, cur.ratioKeys)
	var flagged, compared int
	for _, k := range keys {
		ov, nv := old.ratios[k], cur.ratios[k]
		row := fmt.Sprintf("| %s | %s | %s | %s |", k.figure, k.peer, ratioCell(ov), ratioCell(nv))
		if len(ov) < o.rounds || len(nv) < o.rounds {
			row = fmt.Sprintf("| %s (%d and %d rounds) | %s | %s | %s |", k.figure, len(ov), len(nv), k.peer, ratioCell(ov), ratioCell(nv))
		}
		if len(ov) == 0 || len(nv) == 0 {
			fmt.Fprintln(w, row+" – | only one build has it |")
			continue
		}
		if roundstat.Median(ov) == 0 {
			fmt.Fprintln(w, row+" – | the old ratio is 0 |")
			continue
		}
		compared++
		change := 100 * (roundstat.Median(nv)/roundstat.Median(ov) - 1)
		flag := ""
		if math.Abs(change) > o.tolerance {
			flag = fmt.Sprintf("beyond ±%g %%", o.tolerance)
			flagged++
		}
		fmt.Fprintf(w, "%s %+.1f %% | %s |\n", row, change, flag)
	}

	fmt.Fprintf(w, "\nBenchmarkWorkflow, Redis CPU per node, µs, median of the rounds; ÷ plain is over the median plain task of the same runs; either flagged when it rose by more than %g %%\n\n", o.nodeTolerance)
	fmt.Fprintln(w, "| benchmark | old µs/node | new µs/node | change | old ÷ plain | new ÷ plain | change | |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	names := roundstat.Union(old.nodeNames, cur.nodeNames)
	var higher, nodesCompared int
	for _, n := range names {
		ov, nv := old.nodes[n], cur.nodes[n]
		name := strings.TrimPrefix(n, "BenchmarkWorkflow/")
		if len(ov) == 0 || len(nv) == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | – | | | | only one build has it |\n", name, nodeCell(ov), nodeCell(nv))
			continue
		}
		nodesCompared++
		on, nn := medianOf(ov, nodeCPU), medianOf(nv, nodeCPU)
		ox, nx := on/medianOf(ov, plainCPU), nn/medianOf(nv, plainCPU)
		change := 100 * (nn/on - 1)
		xchange := 100 * (nx/ox - 1)
		var flags []string
		if change > o.nodeTolerance {
			flags = append(flags, "µs/node higher")
		}
		if xchange > o.nodeTolerance {
			flags = append(flags, "÷ plain higher")
		}
		if len(flags) > 0 {
			higher++
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %+.1f %% | %.2f× | %.2f× | %+.1f %% | %s |\n",
			name, on, nn, change, ox, nx, xchange, strings.Join(flags, ", "))
	}
	fmt.Fprintf(w, "\n%d of %d ratios moved beyond ±%g %%; %d of %d workflow benchmarks cost more per node, by more than %g %%.\n",
		flagged, compared, o.tolerance, higher, nodesCompared, o.nodeTolerance)
}

func nodeCPU(f nodeFigures) float64  { return f.node }
func plainCPU(f nodeFigures) float64 { return f.plain }

// medianOf is the median of field over figs.
func medianOf(figs []nodeFigures, field func(nodeFigures) float64) float64 {
	vs := make([]float64, len(figs))
	for i, f := range figs {
		vs[i] = field(f)
	}
	return roundstat.Median(vs)
}

func nodeCell(figs []nodeFigures) string {
	if len(figs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", medianOf(figs, nodeCPU))
}

// ratioCell is a ratio's median over the rounds, with its range when there
// are several.
func ratioCell(vs []float64) string {
	switch len(vs) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf("%.3g×", vs[0])
	}
	return fmt.Sprintf("%.3g× (%.3g–%.3g)", roundstat.Median(vs), slices.Min(vs), slices.Max(vs))
}
