package dashboard

import (
	"context"
	"time"
)

// Schedule is one periodic task as the schedules page shows it.
type Schedule struct {
	Name  string `json:"name"`
	Spec  string `json:"spec"` // cron expression or "@every 5m"
	Queue string `json:"queue"`
	Type  string `json:"type"`
	// Missed is the missed-tick policy, "skip" or "run-once" ("" when
	// unknown).
	Missed string `json:"missed,omitempty"`
	// LastRun and NextRun are zero when unknown.
	LastRun time.Time `json:"last_run"`
	NextRun time.Time `json:"next_run"`
}

// ScheduleSource lists the periodic schedules for the schedules page and
// /api/schedules. InspectorSchedules is the one of queue.Inspector.
type ScheduleSource interface {
	Schedules(ctx context.Context) ([]Schedule, error)
}

// ScheduleFunc adapts a function to a ScheduleSource.
type ScheduleFunc func(ctx context.Context) ([]Schedule, error)

// Schedules calls f.
func (f ScheduleFunc) Schedules(ctx context.Context) ([]Schedule, error) { return f(ctx) }

// Limit is one concurrency or rate limit as the limits page shows it.
type Limit struct {
	Name  string `json:"name"`
	Queue string `json:"queue,omitempty"`
	// Kind says what is limited: "concurrency", "rate", "key", ...
	Kind string `json:"kind"`
	// Max is the limit itself and Per its period for a rate (0 = none).
	Max   int64         `json:"max"`
	Per   time.Duration `json:"-"`
	PerMS int64         `json:"per_ms,omitempty"`
	// Running is how many hold a slot now (for a rate: how many started
	// within the period); Holders, when known, who (task IDs, workers).
	Running int64    `json:"running"`
	Holders []string `json:"holders,omitempty"`
	// Waiting is how many wait for a slot.
	Waiting int64 `json:"waiting"`
}

// LimitSource lists the limits for the limits page and /api/limits.
// InspectorLimits is the one of queue.Inspector.
type LimitSource interface {
	Limits(ctx context.Context) ([]Limit, error)
}

// LimitFunc adapts a function to a LimitSource.
type LimitFunc func(ctx context.Context) ([]Limit, error)

// Limits calls f.
func (f LimitFunc) Limits(ctx context.Context) ([]Limit, error) { return f(ctx) }
