package queuetest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
)

// flowBusy reports whether workflow or batch work is still on its way:
// outcomes of the queues' flow tasks not yet forwarded to their flows, or
// released nodes and callbacks not yet delivered. Drain waits for it, so a
// batch's callback runs within the Drain that ran its last member.
func (e *Env) flowBusy(t testing.TB, queues []string) bool {
	t.Helper()
	ctx := context.Background()
	var cmds []*redis.IntCmd
	_, err := e.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queues {
			for n := range max(e.Config.Partitions[q], 1) {
				cmds = append(cmds, p.LLen(ctx, keys.For(e.Config.Prefix, q, n).Notify()))
			}
		}
		for h := range keys.FlowPartitions {
			cmds = append(cmds, p.ZCard(ctx, keys.Home(e.Config.Prefix, h).Out()))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return true
		}
	}
	return false
}
