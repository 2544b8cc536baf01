package worker

import (
	"context"

	"github.com/shardq/shardq/internal/testclock"
)

// queuetest ticks schedulers on its test clock through internal/testclock.
func init() {
	testclock.Tick = func(ctx context.Context, sched any) error { return sched.(*Scheduler).tickNow(ctx) }
}
