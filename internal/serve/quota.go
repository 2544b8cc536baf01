package serve

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/shardq/shardq/internal/wait"

	"github.com/shardq/shardq/internal/quota"
)

// quotaInterval is how often a worker offers to rebalance the quotas of
// each partitioned queue it serves. Any worker may; one at a time does (a
// lock per queue), so more workers do not mean more rebalances.
const quotaInterval = 500 * time.Millisecond

// rebalanceQuotas keeps the fleet-wide limits of the partitioned queues
// this server runs split where their demand is (internal/quota). A queue
// without such limits costs one script call an interval.
func (s *Engine) rebalanceQuotas(ctx context.Context) {
	for ctx.Err() == nil {
		// the queues served now: QueuePatterns add and remove queues
		widths := s.widths()
		for q := range s.servedQueues() {
			// the partitions served now, draining ones included: a resized
			// queue's quotas follow its layout; one resized down to a
			// single partition still takes its whole limit as its quota
			n := widths[q]
			if n < 1 || (n == 1 && !s.layoutSet(q)) {
				continue
			}
			qq := quota.Queue{Prefix: s.cfg.Prefix, Name: q, Partitions: n, ShardSize: s.cfg.ShardSize, Now: s.cfg.now()}
			if _, err := quota.Rebalance(ctx, s.rdb, qq); err != nil && ctx.Err() == nil {
				s.logRedisError("rebalance quotas", err)
			}
		}
		// jitter, so the workers of a fleet do not all ask at once
		wait.Sleep(ctx, quotaInterval/2+rand.N(quotaInterval))
	}
}
