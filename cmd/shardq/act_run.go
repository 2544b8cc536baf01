package main

import (
	"context"

	"github.com/shardq/shardq/queue"
)

// runCommand runs tasks now: a scheduled task runs now, a retrying or dead
// one is retried now (queue.Inspector.RunTask; the dashboard's "Run now"
// and "Retry"). By ID, or every task of a state a query selects.
var runCommand = &taskAction{
	verb: "run", done: "ran",
	summ:   "run scheduled tasks now, or retry retrying and dead ones now",
	states: []queue.State{queue.StateScheduled, queue.StateRetry, queue.StateDead},
	one: func(insp *queue.Inspector) func(ctx context.Context, q, id string) error {
		return insp.RunTask
	},
	all: func(insp *queue.Inspector) func(ctx context.Context, q string, s queue.State) (int64, error) {
		return insp.RunAllTasks
	},
	details: `
Runs tasks now: a scheduled task runs now instead of at its time, a retrying
or dead task gets its next attempt now (a dead one goes back to dead if it
fails). Its attempts go on counting.

By ID:     shardq run --queue email ID...
By query:  shardq run --queue email --state dead --error timeout --yes

--state scheduled, retry or dead selects every task in the state; --type,
--error, --id-prefix and --group narrow it, as get tasks searches (at most
--max tasks, read before any runs). Without --yes it only says how many it
would run, and exits 2; --dry-run says so and exits 0.`,
}
