// Command bench measures shardq beside its peers, asynq and gocraft/work,
// with the same workloads and method, interleaved in one run on one private
// redis-server it starts itself, and prints medians and ratios.
//
// It is its own module, so the library never depends on the peers:
//
//	cd bench && go run .           # three rounds, the full sizes
//	cd bench && go run . -quick    # a scaled-down smoke run
//
// The payloads workload runs only when -only names it: it measures
// shardq's stored payload forms (uncompressed, S2, zstd, encrypted) with
// ~1 KB JSON documents, Redis bytes per pending task beside the peers up
// to a million tasks, and the forms' enqueue and processing rates, in its
// own tables; it takes longer than all the other workloads together.
//
//	cd bench && go run . -only payloads
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "a scaled-down smoke run (one round, small sizes)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every workload for every system, in a rotated order")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Minute, "stop the whole run after this long")
	flag.StringVar(&o.only, "only", "", "comma-separated workloads: enqueue,producers,process,latency,memory,payloads (default all but payloads, which runs only when named)")
	flag.Parse()
	if err := run(context.Background(), o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are a run's settings.
type options struct {
	quick   bool
	rounds  int
	timeout time.Duration
	only    string
}

// progressTo returns a printf to w.
func progressTo(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}
