package main

import (
	"errors"
	"fmt"
	"github.com/shardq/shardq/bench/internal/roundstat"
	"io"
	"slices"
	"strings"
	"time"
)

// The figures, in the order the report prints them.
const (
	figLimit      = "Redis limit: EVALSHA unpipelined, calls/s"
	figEnqRate    = "Enqueue, 1 producer: tasks/s"
	figEnqCmds    = "Enqueue: Redis commands per task"
	figEnqRedis   = "Enqueue: Redis CPU per task, µs"
	figEnqClient  = "Enqueue: client CPU per task, µs"
	figEnqCPU     = "Enqueue: Redis + client CPU per task, µs"
	figManyRate   = "Enqueue, 64 producers: tasks/s"
	figManyRedis  = "Enqueue, 64 producers: Redis CPU per task, µs"
	figManyCPU    = "Enqueue, 64 producers: Redis + client CPU per task, µs"
	figProcRate   = "Process, concurrency 16: tasks/s"
	figProcRedis  = "Process: Redis CPU per task, µs"
	figProcClient = "Process: client CPU per task, µs"
	figProcCPU    = "Process: Redis + client CPU per task, µs"
	figLatP50     = "Latency at 2000/s open loop: p50, µs"
	figLatP99     = "Latency at 2000/s open loop: p99, µs"
	figLatMax     = "Latency at 2000/s open loop: max, µs"
	figLatRate    = "Latency run: achieved rate, tasks/s"
	figLatLate    = "Latency run: late beats"
)

// figFloorRate and figFloorCPU are a client library's single-enqueue
// floor (see floor): calls/s, and Redis + client CPU per call.
func figFloorRate(lib string) string {
	return fmt.Sprintf("Enqueue floor, a bare LPUSH through %s: calls/s", lib)
}

func figFloorCPU(lib string) string {
	return fmt.Sprintf("Enqueue floor, a bare LPUSH through %s: Redis + client CPU per call, µs", lib)
}

// single reports whether fig is one value per round, not per system.
func single(fig string) bool { return fig == figLimit || strings.HasPrefix(fig, "Enqueue floor") }

func figMemory(n int) string { return fmt.Sprintf("Memory per pending task at %d: bytes", n) }

// figureNames are the figures measureOne records its process and memory
// runs under: the standard workloads' (figures), or the payloads
// workload's (docFigures). procCPU, if set, is Redis + client CPU.
type figureNames struct {
	procRate, procRedis, procClient, procCPU string
	memory                                   func(n int) string
}

var figures = figureNames{procRate: figProcRate, procRedis: figProcRedis, procClient: figProcClient, procCPU: figProcCPU, memory: figMemory}

// results holds every round's value of every figure, per system.
type results struct {
	systems []string
	order   []string
	vals    map[string]map[string][]float64
	fails   map[string]map[string][]string
}

func newResults(systems []string) *results {
	return &results{systems: systems, vals: map[string]map[string][]float64{}, fails: map[string]map[string][]string{}}
}

func (r *results) note(fig string) {
	if !slices.Contains(r.order, fig) {
		r.order = append(r.order, fig)
	}
}

func (r *results) add(fig, system string, v float64) {
	r.note(fig)
	if r.vals[fig] == nil {
		r.vals[fig] = map[string][]float64{}
	}
	r.vals[fig][system] = append(r.vals[fig][system], v)
}

func (r *results) fail(fig, system string, err error) {
	r.note(fig)
	if r.fails[fig] == nil {
		r.fails[fig] = map[string][]string{}
	}
	r.fails[fig][system] = append(r.fails[fig][system], err.Error())
}

func isCheck(err error) bool { return errors.Is(err, errCheck) }

// cell formats a median with its min-max over the rounds.
func cell(vs []float64) string {
	if len(vs) == 0 {
		return "–"
	}
	m := roundstat.Median(vs)
	if len(vs) == 1 {
		return num(m)
	}
	return fmt.Sprintf("%s (%s–%s)", num(m), num(slices.Min(vs)), num(slices.Max(vs)))
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// report prints a Markdown table: each figure's median (min–max) per
// system, and shardq's median over each peer's median.
func report(w io.Writer, r *results, sz sizes, o options, redisVersion string) {
	fmt.Fprintf(w, "\nshardq and its peers, %d round(s), interleaved, one private redis-server %s; %s; %s\n",
		o.rounds, redisVersion, machine(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "sizes: %d single enqueues from 1 producer and %d from %d at once, %d tasks processed at concurrency %d, memory at %v pending, latency %s warm-up + %s window at %d/s from %d producers; %d-byte payloads\n\n",
		sz.enqueues, sz.manyEnqueue, manyProducers, sz.process, sz.concurrency, sz.memory, sz.latWarm, sz.latWindow, latencyRate, latencyProducers, sz.payload)
	head := "| figure | " + strings.Join(r.systems, " | ")
	sep := "| --- |" + strings.Repeat(" --- |", len(r.systems))
	for _, p := range r.systems[1:] {
		head += " | " + r.systems[0] + " ÷ " + p
		sep += " --- |"
	}
	fmt.Fprintln(w, head+" |")
	fmt.Fprintln(w, sep)
	for _, fig := range r.order {
		if single(fig) {
			fmt.Fprintf(w, "| %s | %s |%s\n", fig, cell(r.vals[fig]["redis"]), strings.Repeat(" |", 2*len(r.systems)-2))
			continue
		}
		row := "| " + fig + cells(r, fig, r.systems)
		for _, p := range r.systems[1:] {
			row += " | " + ratioCell(r, fig, r.systems[0], p)
		}
		fmt.Fprintln(w, row+" |")
	}
	if lim := r.vals[figLimit]["redis"]; len(lim) > 0 {
		l := roundstat.Median(lim)
		fmt.Fprintf(w, "\nof Redis's limit (median of %d probes, interleaved):", len(lim))
		for _, s := range r.systems {
			if v := r.vals[figEnqRate][s]; len(v) > 0 {
				fmt.Fprintf(w, " %s single Enqueue %.0f%%;", s, 100*roundstat.Median(v)/l)
			}
		}
		fmt.Fprintln(w)
	}
	if len(r.vals[figFloorRate("go-redis")]["redis"]) > 0 {
		fmt.Fprintf(w, "of the floor of its client library (a bare LPUSH per call, in the same turns):")
		for _, s := range r.systems {
			lib := floorLib[s]
			v, f := r.vals[figEnqRate][s], r.vals[figFloorRate(lib)]["redis"]
			if len(v) > 0 && len(f) > 0 {
				fmt.Fprintf(w, " %s %.2f× %s's;", s, roundstat.Median(v)/roundstat.Median(f), lib)
			}
		}
		fmt.Fprintln(w)
	}
	printFailures(w, r)
}

// cells are the table cells of fig for systems: each median (min–max),
// or why there is none.
func cells(r *results, fig string, systems []string) string {
	row := ""
	for _, s := range systems {
		if f := r.fails[fig][s]; len(f) > 0 {
			row += " | no figure: " + f[0]
			continue
		}
		row += " | " + cell(r.vals[fig][s])
	}
	return row
}

// ratio is system a's median of fig over system b's; false if either
// lacks a figure of a round.
func ratio(r *results, fig, a, b string) (float64, bool) {
	va, vb := r.vals[fig][a], r.vals[fig][b]
	if len(va) == 0 || len(vb) == 0 || roundstat.Median(vb) == 0 || len(r.fails[fig][a])+len(r.fails[fig][b]) > 0 {
		return 0, false
	}
	return roundstat.Median(va) / roundstat.Median(vb), true
}

// ratioCell is ratio as a table cell.
func ratioCell(r *results, fig, a, b string) string { return ratioText(ratio(r, fig, a, b)) }

func ratioText(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

// printFailures prints every failure r holds, figure by figure.
func printFailures(w io.Writer, r *results) {
	for _, fig := range r.order {
		for _, s := range r.systems {
			for _, f := range r.fails[fig][s] {
				fmt.Fprintf(w, "check failed: %s, %s: %s\n", fig, s, f)
			}
		}
	}
}
