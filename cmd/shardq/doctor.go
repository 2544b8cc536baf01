package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/doctor"
)

// doctorCommand audits the invariants of what a prefix holds in Redis
// (internal/doctor) and, with --repair, fixes what it can safely. Exit
// codes: 0 clean (or every violation repaired); 1 Redis unreachable or a
// failed read; 2 bad flags; 3 violations left.
type doctorCommand struct{}

func (*doctorCommand) name() string { return "doctor" }
func (*doctorCommand) summary() string {
	return "audit what Redis holds against shardq's invariants; --repair fixes what is safe"
}

// errViolations is doctor's error when it found violations it left: exit
// code 3, after the report.
var errViolations = errors.New("violations found")

func (c *doctorCommand) run(ctx context.Context, m *Main, args []string) error {
	var redisURL, prefix, output string
	opt := doctor.Options{}
	fs := m.flagSet(c)
	fs.StringVar(&redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	fs.BoolVar(&opt.Repair, "repair", false, "fix what can be fixed safely, and say what was done")
	fs.StringVar(&output, "output", "text", "text or json")
	fs.IntVar(&opt.Examples, "examples", 5, "examples printed per class of violation")
	fs.IntVar(&opt.Page, "page", 500, "COUNT of each SCAN, HSCAN and ZSCAN, and IDs per lookup")
	fs.IntVar(&opt.Pipeline, "pipeline", 16, "commands per pipeline, at most")
	fs.IntVar(&opt.ShardSize, "shard-size", 1000, "queue.Config.ShardSize of your producers, which a repair that returns tasks to pending uses")
	describe(fs, c, "[flags]", doctorDetails, doctorExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := config.CheckName(prefix); err != nil {
		return usageErr("--prefix: %v", err)
	}
	if output != "text" && output != "json" {
		return usageErr("--output %q: want text or json", output)
	}
	if opt.Examples < 1 || opt.Page < 1 || opt.Pipeline < 1 || opt.ShardSize < 1 {
		return usageErr("--examples, --page, --pipeline and --shard-size want >= 1")
	}
	opt.Prefix = prefix
	rdb, closeRedis, err := m.connect(ctx, redisURL, false, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	rep, err := doctor.Run(ctx, rdb, opt)
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeDoctorText(m.Stdout, rep)
	}
	if rep.Violations > rep.Repaired {
		return errViolations
	}
	return nil
}

// writeDoctorText prints one line per check, and under a check that found
// violations its examples and what the repair does.
func writeDoctorText(w io.Writer, rep *doctor.Report) {
	fmt.Fprintf(w, "prefix %s: %d queues, %d partitions, %d keys, read in %s\n", rep.Prefix, rep.Queues, rep.Partitions, rep.Keys, rep.Took)
	width := 0
	for _, f := range rep.Findings {
		width = max(width, len(f.Check))
	}
	for _, f := range rep.Findings {
		status := "ok"
		if f.Count > 0 {
			status = fmt.Sprintf("%d found", f.Count)
			if rep.Repair {
				status += fmt.Sprintf(", %d repaired", f.Repaired)
			}
		}
		fmt.Fprintf(w, "%-*s  %s\n", width, f.Check, status)
		if f.Count == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s\n", f.About)
		for _, e := range f.Examples {
			fmt.Fprintf(w, "    - %s\n", e)
		}
		if more := f.Count - len(f.Examples); more > 0 {
			fmt.Fprintf(w, "    - ... and %d more\n", more)
		}
		verb := "repair"
		if rep.Repair {
			verb = "repaired"
		}
		fmt.Fprintf(w, "    %s: %s\n", verb, f.Repair)
	}
	n := fmt.Sprintf("%d violations", rep.Violations)
	if rep.Violations == 1 {
		n = "1 violation"
	}
	switch {
	case rep.Violations == 0:
		fmt.Fprintln(w, "no violations")
	case rep.Repair:
		fmt.Fprintf(w, "%s, %d repaired; run again to check\n", n, rep.Repaired)
	default:
		fmt.Fprintf(w, "%s; --repair fixes the ones it can (each class's repair line)\n", n)
	}
}
