package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// prefixFlagHelp is the --prefix flag's help.
const prefixFlagHelp = "the key prefix: queue.Config.Prefix of your producers and workers"

// describe replaces fs's help with one that has room for a longer
// description and the exit codes.
func describe(fs *flags, c command, usage, details, exitCodes string) {
	fs.help = func(w io.Writer) {
		fmt.Fprintf(w, "Usage: shardq %s %s\n\n%s\n\n%s\n\nFlags:\n", c.name(), usage, c.summary(), strings.TrimSpace(details))
		fs.defaults(w)
		fmt.Fprintf(w, "\n%s\n", exitCodes)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// visited returns the names of the flags set on the command line.
func visited(fs *flags) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// usageErr returns a usage error (exit code 2) with a formatted message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

const doctorDetails = `
Reads every key under --prefix and checks what docs/ARCHITECTURE.md says
must hold: each task record sits in the list, lease or schedule its state
names; no lease outlives its worker; each list entry has the record it
should; counters agree with the lists; locks, claims and semaphore holders
belong to live tasks; no workflow node waits on finished parents; no keys
of deleted queues; no unused compression dictionaries. It prints each class
of violation with its count and a few examples.

It reads in pages (SCAN, HSCAN, ZSCAN with --page, pipelines of at most
--pipeline commands), so it may run against a live Redis of millions of
tasks, and it confirms each violation with a second look before it reports
one, since tasks move while it reads.

--repair then fixes what can be fixed safely, through the engine's own
scripts where there is one: a stuck lease goes back to pending without
costing an attempt (requeue.lua), an orphaned in-flight list too
(reap.lua), entries and locks that name no task are dropped. It never
deletes a task that could still run. Running it twice does nothing more.

--output json prints the report as one object, for monitoring.`

const doctorExitCodes = `Exit codes:
  0  no violations (with --repair: every one repaired)
  1  Redis unreachable, or a read failed
  2  bad flags
  3  violations found and left`
