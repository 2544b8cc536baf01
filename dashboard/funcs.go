package dashboard

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/queue"
)

// funcs are the helpers templates use. Everything they return is plain
// text, escaped by html/template like any other value.
var funcs = template.FuncMap{
	"link":      link,
	"batchNode": home.IsBatchNode, // a batch is a workflow of its shape
	"formula":   formula,
	"ago":       ago,
	"when":      when,
	"iso":       iso,
	"dur":       dur,
	"selectable": func(s queue.State) bool {
		return s == queue.StateScheduled || s == queue.StateRetry || s == queue.StateDead || s == queue.StateSucceeded
	},
	"ms":        func(n int64) time.Duration { return time.Duration(n) * time.Millisecond },
	"num":       num,
	"int64":     func(n int) int64 { return int64(n) },
	"actions":   taskActions,
	"bulk":      bulkActions,
	"timeOf":    timeOf,
	"timeName":  timeName,
	"listPath":  listPath,
	"nodePath":  nodePath,
	"pauseArgs": pauseArgs,
	"groupArgs": groupArgs,
	// the states of a workflow node in order, and the badge of each
	"nodeStates": func() []string {
		out := make([]string, len(nodeStates))
		for i, s := range nodeStates {
			out[i] = string(s)
		}
		return out
	},
	"badge": badge,
	// a worker's row lists its first leased tasks, not hundreds (a
	// prefetching worker holds up to its Prefetch ahead per partition)
	"shownTasks": func(ts []*queue.TaskInfo) []*queue.TaskInfo { return ts[:min(len(ts), workerTasksShown)] },
	"moreTasks":  func(ts []*queue.TaskInfo) int { return max(0, len(ts)-workerTasksShown) },
}

// badge is the badge class of a workflow's or node's state, in the
// colours the task states use: green for success, red for dead or
// failed, blue for what is under way, amber for cancelled.
func badge(state string) string {
	switch state {
	case "succeeded":
		return "succeeded"
	case "dead", "failed":
		return "dead"
	case "active", "enqueued":
		return "active"
	case "cancelled":
		return "paused"
	}
	return ""
}

// workerTasksShown is how many of a worker's leased tasks its row on the
// workers page lists; the queues' Active tabs list them all.
const workerTasksShown = 10

// listPath is the path of a queue's listing of state, relative to the base.
func listPath(q string, s queue.State) string {
	return "/queues/" + url.PathEscape(q) + "?state=" + url.QueryEscape(string(s))
}

// pauseForm is what the "pauseform" template needs.
type pauseForm struct {
	Base, Queue, Verb, CSRF, Return string
}

func pauseArgs(p page, q string, paused bool) pauseForm {
	verb := "pause"
	if paused {
		verb = "resume"
	}
	return pauseForm{Base: p.Base, Queue: q, Verb: verb, CSRF: p.CSRF, Return: p.Return}
}

// link joins base and path segments, escaping each segment.
func link(base string, parts ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	if len(parts) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// ago says how long ago (or how soon) t is, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + roughly(-d)
	}
	return roughly(d) + " ago"
}

func roughly(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
	return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
}

// when is t in UTC, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// iso is t for a datetime attribute.
func iso(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// dur writes d with its unit: "0s", never a bare "0".
func dur(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return roughly(d)
}

// num writes n with thousands separators.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formAction is a button that posts to a task or queue action.
type formAction struct {
	Path    string // under the queue: "tasks/<id>/run", "run-all"
	Label   string
	Danger  bool
	Confirm string
}

// taskActions are the buttons for a task in its state.
func taskActions(ti *queue.TaskInfo) []formAction {
	switch ti.State {
	case queue.StateScheduled:
		return []formAction{{Path: "run", Label: "Run now"}, {Path: "delete", Label: "Delete", Danger: true}}
	case queue.StateRetry, queue.StateDead:
		return []formAction{{Path: "run", Label: "Retry"}, {Path: "delete", Label: "Delete", Danger: true}}
	case queue.StateSucceeded:
		return []formAction{{Path: "delete", Label: "Delete", Danger: true}}
	case queue.StateActive:
		return []formAction{{Path: "cancel", Label: "Cancel", Danger: true}}
	case queue.StatePending:
		return []formAction{{Path: "delete", Label: "Delete", Danger: true}}
	}
	return nil
}

// bulkActions are the buttons acting on every task of a listing.
func bulkActions(s queue.State) []formAction {
	run := formAction{Path: "run-all", Label: "Retry all", Confirm: "Retry every " + string(s) + " task now?"}
	del := formAction{Path: "delete-all", Label: "Delete all", Danger: true, Confirm: "Delete every " + string(s) + " task?"}
	switch s {
	case queue.StateScheduled:
		run.Label = "Run all now"
		run.Confirm = "Run every scheduled task now?"
		return []formAction{run, del}
	case queue.StateRetry, queue.StateDead:
		return []formAction{run, del}
	case queue.StateSucceeded:
		return []formAction{del}
	case queue.StatePending:
		del.Confirm = "Delete every pending task (the whole backlog)? Tasks a worker is taking right now still run."
		return []formAction{del}
	}
	return nil
}

// timeName and timeOf are the time a listing shows for each task.
func timeName(s queue.State) string {
	switch s {
	case queue.StateActive:
		return "Started"
	case queue.StateScheduled:
		return "Due"
	case queue.StateRetry:
		return "Next attempt"
	case queue.StateDead:
		return "Died"
	case queue.StateSucceeded:
		return "Finished"
	}
	return "Enqueued"
}

func timeOf(s queue.State, ti *queue.TaskInfo) time.Time {
	switch s {
	case queue.StateActive:
		return ti.StartedAt
	case queue.StateScheduled, queue.StateRetry:
		return ti.NextProcessAt
	case queue.StateDead, queue.StateSucceeded:
		return ti.FinishedAt
	}
	return ti.EnqueuedAt
}

// flashes are the messages an action leaves for the page it returns to,
// by the action's name: fixed texts, so a link cannot make the dashboard
// say something of its own.
var flashes = map[string]string{
	"pause":            "Queue paused: workers start none of its tasks until it is resumed.",
	"resume":           "Queue resumed.",
	"run":              "Task queued to run now.",
	"run-all":          "%s tasks queued to run now.",
	"delete":           "Task deleted.",
	"delete-all":       "%s tasks deleted.",
	"cancel":           "Cancel requested: the worker running the task cancels it at its next heartbeat.",
	"delete-queue":     "Queue deleted, with all its Redis keys.",
	"bulk":             "%s tasks changed.",
	"pause-group":      "Group paused: workers start none of its tasks until it is resumed.",
	"resume-group":     "Group resumed: its tasks take their turns again.",
	"set-group-weight": "Group weight set: it counts for the group's tasks enqueued from now on.",
	"cancel-workflow":  "Workflow cancelled: its nodes that have not run never will, and its running tasks are asked to stop.",
}

func flash(r *http.Request) string {
	msg, ok := flashes[r.URL.Query().Get("done")]
	if !ok {
		return ""
	}
	if strings.Contains(msg, "%s") {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		msg = fmt.Sprintf(msg, num(n))
	}
	return msg
}
