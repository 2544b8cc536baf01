package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// samples are one build's figures, a value per round.
type samples struct {
	ratioKeys []ratioKey
	ratios    map[ratioKey][]float64
	nodeNames []string
	nodes     map[string][]nodeFigures
}

func newSamples() *samples {
	return &samples{ratios: map[ratioKey][]float64{}, nodes: map[string][]nodeFigures{}}
}

// run builds both sides, runs them in alternation and prints the report.
func run(ctx context.Context, o options, out, progressW io.Writer) error {
	if o.old == "" {
		return errors.New("-old: give the old revision, such as -old 44e4dc3")
	}
	if o.rounds < 1 || o.rounds > 20 {
		return fmt.Errorf("-rounds %d: want 1 to 20", o.rounds)
	}
	newTree, err := filepath.Abs(o.newDir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(newTree, "bench", "go.mod")); err != nil {
		return fmt.Errorf("-new %s: not the repository's root (no bench/go.mod): %w", o.newDir, err)
	}
	dir, err := os.MkdirTemp("", "shardq-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	progress := func(format string, args ...any) {
		fmt.Fprintf(progressW, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}

	progress("building %s and the working tree", o.old)
	oldB, err := buildOld(ctx, newTree, o.old, dir)
	if err != nil {
		return err
	}
	newB, err := buildNew(ctx, newTree, dir)
	if err != nil {
		return err
	}
	builds := []*build{oldB, newB}
	got := map[string]*samples{"old": newSamples(), "new": newSamples()}

	benchArgs := []string{"-rounds", "1"}
	pattern := o.workflow
	if o.quick {
		benchArgs = append(benchArgs, "-quick")
		if pattern == "" {
			pattern = "^BenchmarkWorkflow$/^shape=fan-in$/^nodes=1000$"
		}
	}
	if pattern == "" {
		pattern = "^BenchmarkWorkflow$"
	}
	var verbose io.Writer
	if o.verbose {
		verbose = progressW
	}
	start := time.Now()
	for round := 1; round <= o.rounds; round++ {
		for _, b := range builds {
			progress("round %d/%d: bench, %s build", round, o.rounds, b.name)
			stdout, err := capture(ctx, filepath.Join(b.tree, "bench"), nil, verbose, b.bench, benchArgs...)
			if err != nil {
				return fmt.Errorf("round %d, the %s bench: %w", round, b.name, err)
			}
			keys, vals := parseRatios(stdout)
			if len(keys) == 0 {
				return fmt.Errorf("round %d, the %s bench: %w:\n%s", round, b.name, errNoFigures, stdout)
			}
			got[b.name].addRatios(keys, vals)
		}
		for _, b := range builds {
			progress("round %d/%d: BenchmarkWorkflow, %s build", round, o.rounds, b.name)
			stdout, err := capture(ctx, filepath.Join(b.tree, "worker"), nil, verbose, b.worker,
				"-test.run", "^$", "-test.bench", pattern, "-test.benchtime", "1x", "-test.count", "1")
			if err != nil {
				return fmt.Errorf("round %d, the %s BenchmarkWorkflow: %w\n%s", round, b.name, err, stdout)
			}
			names, figs := parseWorkflow(stdout)
			if len(names) == 0 {
				return fmt.Errorf("round %d, the %s BenchmarkWorkflow (%s): %w:\n%s", round, b.name, pattern, errNoFigures, stdout)
			}
			got[b.name].addNodes(names, figs)
		}
	}
	report(out, o, oldB, newB, got["old"], got["new"], time.Since(start))
	return nil
}

func (s *samples) addRatios(keys []ratioKey, vals map[ratioKey]float64) {
	for _, k := range keys {
		if _, seen := s.ratios[k]; !seen {
			s.ratioKeys = append(s.ratioKeys, k)
		}
		s.ratios[k] = append(s.ratios[k], vals[k])
	}
}

func (s *samples) addNodes(names []string, figs map[string]nodeFigures) {
	for _, n := range names {
		if _, seen := s.nodes[n]; !seen {
			s.nodeNames = append(s.nodeNames, n)
		}
		s.nodes[n] = append(s.nodes[n], figs[n])
	}
}
