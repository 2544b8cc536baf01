package dashboard

import "time"

// scheduleRow is one periodic task as the schedules page shows it.
type scheduleRow struct {
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

// limitRow is one concurrency or rate limit as the limits page shows it.
type limitRow struct {
	Name  string `json:"name"`
	Queue string `json:"queue,omitempty"`
	// Kind says what is limited: "concurrency", "rate", "group", ...
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
