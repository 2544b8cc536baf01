package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// stateRecent names the feed of tasks enqueued lately, whatever their
// state now: a queue.TaskQuery without a State, the dashboard's "recent".
const stateRecent queue.State = "recent"

// listStates are the states get tasks lists.
var listStates = []queue.State{queue.StatePending, queue.StateActive, queue.StateScheduled, queue.StateRetry,
	queue.StateDead, queue.StateSucceeded, stateRecent}

func joinStates(states []queue.State) string {
	s := make([]string, len(states))
	for i, st := range states {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// inspectorState is s as queue.TaskQuery takes it: recent is no state.
func inspectorState(s queue.State) queue.State {
	if s == stateRecent {
		return ""
	}
	return s
}

// when is the time a listing of tasks in state shows: what comes next
// for tasks waiting, what happened last for the others.
func when(ti *queue.TaskInfo, state queue.State) time.Time {
	switch state {
	case queue.StateScheduled, queue.StateRetry:
		return ti.NextProcessAt
	case queue.StateActive:
		return ti.StartedAt
	case queue.StateDead, queue.StateSucceeded:
		return ti.FinishedAt
	}
	return ti.EnqueuedAt
}

// ago renders t relative to now, in one unit: "3m ago", "in 5s", "-".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + short(-d)
	}
	return short(d) + " ago"
}

// short is d in its largest whole unit: 45s, 3m, 2h, 4d.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return itoa(int64(d/time.Second)) + "s"
	case d < time.Hour:
		return itoa(int64(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return itoa(int64(d/time.Hour)) + "h"
	}
	return itoa(int64(d/(24*time.Hour))) + "d"
}

// itoa is strconv.FormatInt in base 10, for the cells of tables.
func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}
