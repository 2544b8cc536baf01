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
