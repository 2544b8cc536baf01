package worker

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/testclock"
)

// queuetest ticks a server's schedules on its test clock through
// internal/testclock.
func init() {
	testclock.Tick = func(ctx context.Context, srv any) error { return srv.(*Server).cron.tickNow(ctx) }
	testclock.Next = func(srv any) time.Time { return srv.(*Server).cron.next() }
	testclock.Queues = func(srv any) []string { return srv.(*Server).cron.queues() }
}
