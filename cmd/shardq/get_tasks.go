package main

import (
	"context"
	"fmt"
	"time"

	"github.com/shardq/shardq/queue"
)

// taskPage is a page of tasks as --output json prints it.
type taskPage struct {
	Tasks []taskJSON `json:"tasks"`
	// Next is the marker of the following page ("" at the end).
	Next string `json:"next"`
	// Scanned is how many tasks a search or --group read.
	Scanned int `json:"scanned,omitempty"`
}

// getTasks lists a page of a queue's tasks.
func getTasks(ctx context.Context, m *Main, s *session, f *getFlags, _ []string) error {
	q := f.query()
	page, err := s.insp.ListTasks(ctx, q)
	if err != nil {
		return s.explain(ctx, err, f.queue)
	}
	if f.out.json() {
		out := taskPage{Tasks: make([]taskJSON, 0, len(page.Tasks)), Next: page.Next, Scanned: page.Scanned}
		for _, ti := range page.Tasks {
			out.Tasks = append(out.Tasks, newTaskJSON(ti, false))
		}
		return writeJSON(m.Stdout, out)
	}
	state := queue.State(f.state)
	if state == "" {
		state = stateShown(q)
	}
	writeTasks(m, page.Tasks, state)
	if more(q, page) {
		fmt.Fprintf(m.Stderr, "more: add --after %s\n", page.Next)
	}
	return nil
}

// query is the TaskQuery of the flags: with a search filter and no
// --state, the recent feed, as the dashboard's search reads it.
func (f *getFlags) query() queue.TaskQuery {
	q := queue.TaskQuery{Queue: f.queue, State: queue.State(f.state), After: f.after, Limit: f.limit,
		Type: f.typ, Error: f.errText, IDPrefix: f.idPrefix, Group: f.group, Scan: f.scan}
	if q.State == "" {
		q.State = queue.StatePending
		if q.Type != "" || q.Error != "" || q.IDPrefix != "" {
			q.State = stateRecent
		}
	}
	switch f.order {
	case "newest":
		q.Newest = true
	case "":
		q.Newest = q.State == queue.StateDead || q.State == queue.StateSucceeded || q.State == stateRecent
	}
	q.State = inspectorState(q.State)
	return q
}

// more reports whether tasks follow page: a search's Next is "" at the
// end, and a listing's page is short there (its Next stays set, for a
// reader that comes back for what arrives later).
func more(q queue.TaskQuery, page *queue.TaskPage) bool {
	switch {
	case page.Next == "":
		return false
	case q.Type != "" || q.Error != "" || q.IDPrefix != "" || q.Group != "":
		return true
	}
	return len(page.Tasks) >= q.Limit
}

// stateShown names the listing of q for the table's time column.
func stateShown(q queue.TaskQuery) queue.State {
	if q.State == "" {
		return stateRecent
	}
	return q.State
}

// writeTasks prints tasks as a table: the ID whole, the type and error
// cut to fit; a state column only for the recent feed, where states mix.
func writeTasks(m *Main, tasks []*queue.TaskInfo, state queue.State) {
	cols := []column{{head: "ID"}}
	if state == stateRecent {
		cols = append(cols, column{head: "STATE"})
	}
	cols = append(cols, column{head: "TYPE", cut: true}, column{head: "GROUP", cut: true, optional: true},
		column{head: "ATTEMPTS", right: true, optional: true}, column{head: whenHead(state)}, column{head: "ERROR", cut: true, optional: true})
	t := newTable(cols...)
	now := time.Now()
	for _, ti := range tasks {
		row := []string{ti.ID}
		if state == stateRecent {
			row = append(row, string(ti.State))
		}
		shown := state
		if state == stateRecent {
			shown = ti.State
		}
		row = append(row, ti.Type, dash(ti.Group), itoa(int64(ti.Attempts)), ago(when(ti, shown), now), dash(ti.LastError))
		t.add(row...)
	}
	t.write(m.Stdout)
}

// whenHead names the time column of a listing of state.
func whenHead(state queue.State) string {
	switch state {
	case queue.StateScheduled, queue.StateRetry:
		return "DUE"
	case queue.StateActive:
		return "STARTED"
	case queue.StateDead, queue.StateSucceeded:
		return "FINISHED"
	case stateRecent:
		return "WHEN"
	}
	return "ENQUEUED"
}

// dash shows an empty cell as "-", so columns stay readable with awk.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
