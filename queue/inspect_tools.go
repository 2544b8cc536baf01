package queue

import (
	"context"

	"github.com/shardq/shardq/internal/inspect"
)

// The reads only shardq's own tools call go to them through
// internal/inspect, outside this package's API.
func init() {
	inspect.LiveWork = func(ctx context.Context, insp any) (map[string]inspect.QueueWork, error) {
		return insp.(*Inspector).liveWork(ctx)
	}
	inspect.Quotas = func(ctx context.Context, insp any, queue string) ([]inspect.Quota, error) {
		return insp.(*Inspector).quotas(ctx, queue)
	}
	inspect.RecentFlows = func(ctx context.Context, insp any, limit int) ([]inspect.FlowSummary, error) {
		return insp.(*Inspector).recentFlows(ctx, limit)
	}
}
