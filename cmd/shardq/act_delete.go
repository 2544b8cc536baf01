package main

import (
	"context"

	"github.com/shardq/shardq/queue"
)

// deleteCommand deletes tasks (queue.Inspector.DeleteTask, DeleteAllTasks;
// the dashboard's "Delete" and "Delete all"), releasing their uniqueness
// locks. By ID, or every task of a state a query selects: --state pending
// purges the backlog.
var deleteCommand = &taskAction{
	verb: "delete", done: "deleted",
	summ:   "delete tasks, or purge a state: every pending, dead, ... task",
	states: []queue.State{queue.StatePending, queue.StateScheduled, queue.StateRetry, queue.StateDead, queue.StateSucceeded},
	one: func(insp *queue.Inspector) func(ctx context.Context, q, id string) error {
		return insp.DeleteTask
	},
	all: func(insp *queue.Inspector) func(ctx context.Context, q string, s queue.State) (int64, error) {
		return insp.DeleteAllTasks
	},
	details: `
Deletes tasks that are not running (cancel a running one), releasing their
uniqueness locks.

By ID:     shardq delete --queue email ID...
By query:  shardq delete --queue email --state dead --type 'report:*' --yes
Purge:     shardq delete --queue email --state pending --yes

--state pending, scheduled, retry, dead or succeeded selects every task in
the state; --type, --error, --id-prefix and --group narrow it, as get tasks
searches (at most --max tasks, read before any is deleted). --state pending
without a filter empties the backlog from its head, at most the tasks
pending when it began; tasks a worker is taking then, and tasks waiting for
their group, still run. Without --yes it only says how many it would delete,
and exits 2; --dry-run says so and exits 0.`,
}
