// Package inspect holds the reads of queue.Inspector that only shardq's own
// tools call (the dashboard, the metrics collector and the CLI), so that
// they stay out of the public API.
//
// Package queue sets the function variables in its init, in the way grpc's
// internal package hands its siblings what they need: queue imports this
// package, so it cannot import queue back, and the functions take the
// *queue.Inspector as an any. Calling one with anything else panics, a
// programming error a test finds at once.
package inspect

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/wire"
)

// MaxPageSize bounds every page an Inspector listing returns; the dashboard
// clamps its own page sizes to it.
const MaxPageSize = 1000

// MaxSearchScan bounds how many tasks one ListTasks with a filter reads.
const MaxSearchScan = 2000

// QueueWork is what the live workers serving one queue published with
// their last heartbeats, summed.
type QueueWork struct {
	Workers int // live worker processes serving the queue
	Running int // handlers running its tasks
	// Ahead counts its tasks leased ahead of the workers' free slots and
	// held, not started (see queue.WorkerInfo.Ahead): active, but not running.
	Ahead int
	// AheadGroups counts, of Ahead, the tasks of each group.
	AheadGroups map[string]int
}

// Add returns w with one more live worker, whose work on the queue is qw.
func (w QueueWork) Add(qw wire.QueueWork) QueueWork {
	w.Workers++
	w.Running += qw.Running
	w.Ahead += qw.Ahead
	for g, n := range qw.AheadGroups {
		if w.AheadGroups == nil {
			w.AheadGroups = map[string]int{}
		}
		w.AheadGroups[g] += n
	}
	return w
}

// SplitGroup splits a group's leased tasks (queue.GroupInfo.Running)
// into those whose handler runs and those a worker leased ahead and
// holds, by the workers' last heartbeats. A heartbeat lags the leases, so
// ahead is capped at leased.
func (w QueueWork) SplitGroup(group string, leased int64) (running, ahead int64) {
	ahead = min(int64(w.AheadGroups[group]), leased)
	return leased - ahead, ahead
}

// FlowSummary names one recent chain, batch or workflow.
type FlowSummary struct {
	Kind      string // "batch", "chain" or "workflow"
	ID        string
	CreatedAt time.Time
}

// LiveWork returns, per queue, the live workers serving it and what they
// run, from the statuses their heartbeats publish, in one round trip. A
// worker too old to publish a status is not counted. insp is a
// *queue.Inspector.
var LiveWork func(ctx context.Context, insp any) (map[string]QueueWork, error)

// Quota is one partition's share of its queue's fleet-wide limits: how
// many of the queue's tasks may run there at once, and start there per
// the limits' Per; -1 where that kind is not limited.
type Quota struct {
	Partition   int
	Concurrency int
	Rate        int
}

// Quotas returns, on a queue of several partitions, each partition's
// quota now, in one round trip after the registry read; nil on a queue
// of one partition. insp is a *queue.Inspector.
var Quotas func(ctx context.Context, insp any, queue string) ([]Quota, error)

// RecentFlows returns the newest chains, batches and workflows (at most
// limit), newest first. insp is a *queue.Inspector.
var RecentFlows func(ctx context.Context, insp any, limit int) ([]FlowSummary, error)
