// Package testclock hands queuetest what it needs of the worker to run
// schedules on a test clock, outside worker's public API: a Scheduler's
// tick, which enqueues what is due at its clock now. Package worker sets
// Tick in its init (it cannot import queuetest, which imports it).
package testclock

import "context"

// Tick enqueues, once, what is due at the scheduler's clock now, as a
// running scheduler does on its own. sched is a *worker.Scheduler whose
// SchedulerConfig.Clock the caller moves; Tick on a started scheduler is
// worker.ErrServerState.
var Tick func(ctx context.Context, sched any) error
