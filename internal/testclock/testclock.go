// Package testclock hands queuetest what it needs of the worker to run
// schedules on a test clock, outside worker's public API: a Scheduler's
// tick, which enqueues what is due at its clock now, the time of its next
// tick, and the queues its schedules enqueue into. Package worker sets
// these in its init (it cannot import queuetest, which imports it).
package testclock

import (
	"context"
	"time"
)

// Tick enqueues, once, what is due at the scheduler's clock now, as a
// running scheduler does on its own. sched is a *worker.Scheduler whose
// SchedulerConfig.Clock the caller moves; Tick on a started scheduler is
// worker.ErrServerState.
var Tick func(ctx context.Context, sched any) error

// Next returns the earliest next tick of a *worker.Scheduler's schedules,
// after where each left off (after its clock's now before its first
// tick); zero when it has none.
var Next func(sched any) time.Time

// Queues returns the queues a *worker.Scheduler's schedules enqueue into,
// each once.
var Queues func(sched any) []string
