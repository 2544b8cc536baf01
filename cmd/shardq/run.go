package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/shardq/shardq"
)

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad flags or arguments
	// exitViolations: doctor found violations it left (its report says which)
	exitViolations = 3
)

// Main is the shardq program: its output streams and environment, so
// tests run it in-process.
type Main struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// LookupEnv also says whether a variable is set, so a secret set
	// empty is refused rather than taken as no secret; nil = Getenv,
	// where empty means unset.
	LookupEnv func(string) (string, bool)
	// Name is how the user ran shardq (os.Args[0]), for commands it
	// prints ready to paste; "" = "shardq".
	Name           string
	connectTimeout time.Duration // 0 = connectTimeout (tests shorten it)
}

// command is one subcommand, with its own flags.
type command interface {
	name() string
	summary() string
	run(ctx context.Context, m *Main, args []string) error
}

func (m *Main) commands() []command {
	return []command{&workerCommand{}, &enqueueCommand{}, &statsCommand{}, &getCommand{}, &describeCommand{},
		runCommand, deleteCommand, &cancelCommand{}, &pauseCommand{}, &pauseCommand{resume: true}, &weightCommand{},
		&deleteQueueCommand{}, &partitionsCommand{}, &doctorCommand{}, &serveCommand{}, &dashboardCommand{}, &demoCommand{}, &benchCommand{}}
}

// self is the command that runs this binary again: its path when it was
// run as a built binary, "go run ./cmd/shardq" from go run's temporary one.
func (m *Main) self() string {
	switch {
	case m.Name == "":
		return "shardq"
	case strings.Contains(m.Name, "go-build"):
		return "go run ./cmd/shardq"
	}
	return m.Name
}

// Run runs the subcommand named by args[0] and returns the exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "-h"} // 'shardq help worker' = 'shardq worker -h'
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(m.Stdout, version())
		return exitOK
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		m.usage(m.Stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range m.commands() {
		if c.name() != args[0] {
			continue
		}
		err := c.run(ctx, m, args[1:])
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errViolations):
			return exitViolations
		case errors.Is(err, errUsage):
			// one line: what was wrong, and where the flags are listed
			fmt.Fprintf(m.Stderr, "shardq %s: %s (run 'shardq help %s')\n",
				c.name(), strings.TrimPrefix(err.Error(), errUsage.Error()+": "), c.name())
			return exitUsage
		default:
			fmt.Fprintf(m.Stderr, "shardq %s: %v\n", c.name(), err)
			return exitFailure
		}
	}
	if hint, ok := commandHints[args[0]]; ok {
		fmt.Fprintf(m.Stderr, "shardq: unknown command %q: use 'shardq %s' (run 'shardq help' for the list)\n", args[0], hint)
		return exitUsage
	}
	fmt.Fprintf(m.Stderr, "shardq: unknown command %q (run 'shardq help' for the list)\n", args[0])
	return exitUsage
}

// commandHints name the command that does what an operator reached for
// with another tool's word.
var commandHints = map[string]string{
	"retry":   "run",
	"purge":   "delete --state pending",
	"list":    "get",
	"ls":      "get",
	"show":    "describe",
	"inspect": "describe",
	"rm":      "delete",
}

// errUsage marks errors in how the command was called.
var errUsage = errors.New("usage")

func (m *Main) usage(w io.Writer) {
	fmt.Fprintln(w, "shardq: task queues for Go on Redis\n\nUsage: shardq <command> [flags]\n\nCommands:")
	for _, c := range m.commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name(), c.summary())
	}
	fmt.Fprintln(w, "  version       print shardq's version")
	fmt.Fprintln(w, "\nRun 'shardq help <command>' or 'shardq <command> -h' for a command's flags.")
}

// version is shardq.Version, the commit it was built from when the build
// recorded one, and the Go version that built it.
func version() string {
	v := "shardq " + shardq.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v + ", " + bi.GoVersion
}

// flags is a command's flag set and its help text.
type flags struct {
	*flag.FlagSet
	stdout io.Writer
	help   func(w io.Writer) // the text -h prints
}

// flagSet returns a command's flags. The flag package's own output (the
// error, then the whole usage, on stderr) is silenced: -h prints the help
// to stdout, so it pipes into less or grep, and a bad flag is one line
// from Run.
func (m *Main) flagSet(c command) *flags {
	fs := &flags{FlagSet: flag.NewFlagSet("shardq "+c.name(), flag.ContinueOnError), stdout: m.Stdout}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.help = func(w io.Writer) {
		fmt.Fprintf(w, "Usage: shardq %s [flags]\n\n%s\n\nFlags:\n", c.name(), c.summary())
		fs.defaults(w)
	}
	return fs
}

// defaults prints the flags and their defaults to w.
func (fs *flags) defaults(w io.Writer) {
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parse parses args: -h prints the help to stdout (flag.ErrHelp), a bad
// flag or value is a usage error naming it.
func parse(fs *flags, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help(fs.stdout)
			return err
		}
		return fmt.Errorf("%w: %v%s", errUsage, err, flagHint(fs, err))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return nil
}
