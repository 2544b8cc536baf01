package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// parseArgs parses args with flags and arguments in any order, as
// kubectl takes them ("get tasks --queue email" and "get --queue email
// tasks"), and returns the arguments. -h prints the help, as parse does;
// a bad flag is a usage error naming it, with the flag's name here when
// the user reached for another word (--key for --group).
func parseArgs(fs *flags, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.help(fs.stdout)
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v%s", errUsage, err, flagHint(fs, err))
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

// misnamedFlags maps flags users type, from other tools or from the words
// the glossary retired, to shardq's flag for the same idea.
var misnamedFlags = map[string]string{
	"key":        "group",
	"fair-key":   "group",
	"fairkey":    "group",
	"unique-key": "unique-by",
	"json":       "output",
	"force-yes":  "yes",
}

// flagHint names the flag that does what an undefined one was meant to,
// when fs has it: "; the group is --group".
func flagHint(fs *flags, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	want, ok := misnamedFlags[name]
	if !ok || fs.Lookup(want) == nil || fs.Lookup(name) != nil {
		return ""
	}
	return fmt.Sprintf(" (did you mean --%s?)", want)
}
