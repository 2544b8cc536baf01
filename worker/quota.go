package worker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/shardq/shardq/internal/quota"
)

// quotaInterval is how often a worker offers to rebalance the quotas of
// each partitioned queue it serves. Any worker may; one at a time does (a
// lock per queue), so more workers do not mean more rebalances.
const quotaInterval = 500 * time.Millisecond

// rebalanceQuotas keeps the fleet-wide limits of the partitioned queues
// this server runs split where their demand is (internal/quota). A queue
// without such limits costs one script call an interval.
func (s *Server) rebalanceQuotas(ctx context.Context) {
	var qs []quota.Queue
	for q := range s.cfg.Queues {
		if n := s.cfg.PartitionsOf(q); n > 1 {
			qs = append(qs, quota.Queue{Prefix: s.cfg.Prefix, Name: q, Partitions: n, ShardSize: s.cfg.ShardSize})
		}
	}
	if len(qs) == 0 {
		return
	}
	for ctx.Err() == nil {
		for _, q := range qs {
			q.Now = s.cfg.now()
			if _, err := quota.Rebalance(ctx, s.rdb, q); err != nil && ctx.Err() == nil {
				s.logRedisError("rebalance quotas", err)
			}
		}
		// jitter, so the workers of a fleet do not all ask at once
		sleepCtx(ctx, quotaInterval/2+rand.N(quotaInterval))
	}
}
