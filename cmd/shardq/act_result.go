package main

import (
	"fmt"
	"strings"
)

// actionResult is what an action did, or with --dry-run would do, as
// --output json prints it. The names are the dashboard's actions and the
// count its API's ("count").
type actionResult struct {
	Action   string `json:"action"`
	Queue    string `json:"queue,omitempty"`
	State    string `json:"state,omitempty"`
	Group    string `json:"group,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// Count is how many tasks it changed, or would change.
	Count  int64 `json:"count"`
	DryRun bool  `json:"dry_run"`
	// AtLeast says the selection stopped at --max: more tasks match than
	// Count, and a second run changes more.
	AtLeast bool `json:"at_least,omitempty"`
	// Failed are the tasks named by ID that it could not change.
	Failed []failedTask `json:"failed,omitempty"`
}

// failedTask is a task an action named by ID and could not change.
type failedTask struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// print writes r as JSON, or for people: said on stdout, a line per
// failed task on stderr.
func (r *actionResult) print(m *Main, asJSON bool, said string) error {
	if asJSON {
		return writeJSON(m.Stdout, r)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(m.Stderr, "task %s: %s\n", f.ID, f.Error)
	}
	fmt.Fprintln(m.Stdout, said)
	return nil
}

// partial prints r when it changed some tasks; when it changed none,
// only the failures go out (on stderr), so a command that fails prints
// nothing on stdout for a script to take for output.
func (r *actionResult) partial(m *Main, asJSON bool, said string) error {
	if r.Count == 0 && len(r.Failed) > 0 {
		for _, f := range r.Failed {
			fmt.Fprintf(m.Stderr, "task %s: %s\n", f.ID, f.Error)
		}
		return nil
	}
	return r.print(m, asJSON, said)
}

// tasksOf says how many tasks, in which state, of which queue: "3 dead
// tasks of queue \"email\"", "at least 10000 ...".
func tasksOf(n int64, atLeast bool, state, q string) string {
	var b strings.Builder
	if atLeast {
		b.WriteString("at least ")
	}
	fmt.Fprintf(&b, "%d ", n)
	if state != "" {
		b.WriteString(state + " ")
	}
	if n == 1 {
		b.WriteString("task")
	} else {
		b.WriteString("tasks")
	}
	fmt.Fprintf(&b, " of queue %q", q)
	return b.String()
}
