package worker

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/testclock"
)

// queuetest ticks schedulers on its test clock through internal/testclock.
func init() {
	testclock.Tick = func(ctx context.Context, sched any) error { return sched.(*Scheduler).tickNow(ctx) }
	testclock.Next = func(sched any) time.Time { return sched.(*Scheduler).next() }
	testclock.Queues = func(sched any) []string { return sched.(*Scheduler).queues() }
}
