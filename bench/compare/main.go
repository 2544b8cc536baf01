// Command compare runs the bench of an old revision and of the current tree
// in alternation, round by round, and prints how each of shardq's ratios
// against its peers and BenchmarkWorkflow's per-node cost moved:
//
//	cd bench && go run ./compare -old 44e4dc3            # 3 rounds of each
//	cd bench && go run ./compare -old 44e4dc3 -quick     # a smoke run
//
// It extracts the old revision with git archive into a temporary directory,
// where that tree's bench/go.mod replace (../) points at the old library,
// and builds there the bench binary and the worker package's test binary;
// the current tree's are built from the working tree, uncommitted changes
// included. An archive, not a git worktree, leaves the repository's list
// of worktrees alone while others use it.
//
// Each round runs the bench once per build (-rounds 1), old then new, and
// then BenchmarkWorkflow once per build, old then new; the report gives
// each figure's median over the rounds. A ratio that moved by more than
// -tolerance percent is flagged, either way, and so is a per-node cost
// or a ratio of it to the plain task that rose by more than -node-tolerance
// percent.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.old, "old", "", "the old revision (a commit, tag or branch)")
	flag.StringVar(&o.newDir, "new", "..", "the current tree: the repository's root, whose bench/ is built")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs the bench and BenchmarkWorkflow once per build")
	flag.BoolVar(&o.quick, "quick", false, "a smoke run: bench -quick, one workflow shape of 1,000 nodes, 1 round unless -rounds is given")
	flag.Float64Var(&o.tolerance, "tolerance", 5, "flag a ratio that moved by more than this, in percent")
	flag.Float64Var(&o.nodeTolerance, "node-tolerance", 0, "flag a per-node cost that rose by more than this, in percent")
	flag.StringVar(&o.workflow, "workflow", "", "the BenchmarkWorkflow pattern (default: every shape and size; -quick: fan-in of 1,000)")
	flag.BoolVar(&o.verbose, "v", false, "pass the runs' progress through to standard error")
	flag.DurationVar(&o.timeout, "timeout", 4*time.Hour, "stop the whole comparison after this long")
	flag.Parse()
	if o.quick && !isSet("rounds") {
		o.rounds = 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// isSet reports whether the flag name was given on the command line.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// options are a comparison's settings.
type options struct {
	old, newDir              string
	rounds                   int
	quick                    bool
	tolerance, nodeTolerance float64
	workflow                 string
	verbose                  bool
	timeout                  time.Duration
}
