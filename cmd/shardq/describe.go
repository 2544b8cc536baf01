package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// describeCommand shows one thing in full, as kubectl describe does: a
// queue, a task, a group, a workflow or a workflow's node. Exit codes: 0 shown; 1 Redis
// unreachable, not found (the message says whether the queue or the
// prefix has nothing); 2 bad flags, kind or name.
type describeCommand struct{}

func (*describeCommand) name() string { return "describe" }
func (*describeCommand) summary() string {
	return "show a queue, a task, a group, a workflow or a node in full"
}

const describeDetails = `
Kinds:
  queue NAME               its tasks per state, latency, groups and limits
  task ID --queue Q        every field: payload, headers, error, result
  group NAME --queue Q     its tasks waiting and running, weight, pause
  workflow ID              its state and every node, a chain's or batch's too
  node NAME --workflow ID  a node's state, edges, result, and its task while
                           Redis keeps it (a node's task needs no retention)

--output json prints the same as one JSON object.`

const describeExitCodes = `Exit codes:
  0  shown
  1  Redis unreachable, or not found: the message says whether the queue,
     or the key prefix, has nothing (naming the prefixes that have queues)
  2  bad flags, kind or name`

// describeKind shows one kind; scope names the flag it requires, whose
// value show gets as scope: "queue", "workflow", or "" for none.
type describeKind struct {
	scope string
	show  func(ctx context.Context, m *Main, s *session, scope, name string, asJSON bool) error
}

var describeKinds = map[string]describeKind{
	"queue":    {"", describeQueue},
	"task":     {"queue", describeTask},
	"group":    {"queue", describeGroup},
	"workflow": {"", describeWorkflow},
	"node":     {"workflow", describeNode},
}

func (c *describeCommand) run(ctx context.Context, m *Main, args []string) error {
	var f inspectFlags
	var q, wf string
	fs := m.flagSet(c)
	f.add(fs)
	fs.StringVar(&q, "queue", "", "the queue of the task or group")
	fs.StringVar(&wf, "workflow", "", "the workflow of the node")
	describe(fs, c, "KIND NAME [flags]", describeDetails, describeExitCodes)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var names []string
	for k := range describeKinds {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(pos) != 2 {
		return usageErr("want a kind and a name (describe task ID --queue Q), got %q; kinds: %s", pos, strings.Join(names, ", "))
	}
	kind, ok := describeKinds[strings.TrimSuffix(pos[0], "s")]
	if !ok {
		return usageErr("unknown kind %q, want one of %s", pos[0], strings.Join(names, ", "))
	}
	scope := ""
	switch {
	case kind.scope == "queue":
		if err := needQueue(q); err != nil {
			return err
		}
		scope = q
	case kind.scope == "workflow":
		if wf == "" {
			return usageErr("--workflow is required: describe node NAME --workflow ID")
		}
		scope = wf
	}
	if q != "" && kind.scope != "queue" {
		return usageErr("--queue does not apply to describe %s", pos[0])
	}
	if wf != "" && kind.scope != "workflow" {
		return usageErr("--workflow does not apply to describe %s", pos[0])
	}
	s, err := m.open(ctx, &f)
	if err != nil {
		return err
	}
	defer s.close()
	return kind.show(ctx, m, s, scope, pos[1], f.out.json())
}

// fields are the lines of a description, "Name:  value", aligned.
type fields struct{ rows [][2]string }

func (f *fields) add(name, value string) { f.rows = append(f.rows, [2]string{name, value}) }

// opt adds the line only when value is set.
func (f *fields) opt(name, value string) {
	if value != "" && value != "-" {
		f.add(name, value)
	}
}

// maxValue bounds a value's text, in runes: four lines of a terminal, so
// a megabyte payload does not scroll the rest away. --output json has
// every value whole.
const maxValue = 4 * termWidth

func (f *fields) write(w io.Writer) {
	width := 0
	for _, r := range f.rows {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	for _, r := range f.rows {
		v := r[1]
		if n := utf8.RuneCountInString(v); n > maxValue {
			v = fmt.Sprintf("%s (%d characters in all: --output json has it whole)", fit(v, maxValue), n)
		}
		fmt.Fprintf(w, "%-*s  %s\n", width+1, r[0]+":", v)
	}
}
