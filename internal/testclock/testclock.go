// Package testclock hands queuetest what it needs of the worker to run
// schedules on a test clock, outside worker's public API: the tick of a
// server's schedules, which enqueues what is due at its clock now, the
// time of their next tick, and the queues they enqueue into. Package
// worker sets these in its init (it cannot import queuetest, which
// imports it).
package testclock

import (
	"context"
	"time"
)

// Tick enqueues, once, what is due at the server's clock now, as a
// running server does on its own. srv is a *worker.Server with
// Config.Schedules whose Config.Clock the caller moves; Tick on a started
// server is worker.ErrInvalid.
var Tick func(ctx context.Context, srv any) error

// Next returns the earliest next tick of a *worker.Server's schedules,
// after where each left off (after its clock's now before its first
// tick); zero when it has none.
var Next func(srv any) time.Time

// Queues returns the queues a *worker.Server's schedules enqueue into,
// each once.
var Queues func(srv any) []string
