package serve

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
)

// sendReplicated is send under queue.Config.WaitReplicas: each
// partition's outcomes are written by one script call followed, on the
// same connection, by WAIT, so the flusher goes on only once the replicas
// have them; one round trip per partition and kind. Fetchers then carry no
// outcomes in their pops. A write that fewer replicas confirmed in time
// stands (the script ran) and is not sent again: it is logged, since a
// failover now may lose it, and the task then runs again.
func (s *Engine) sendReplicated(groups []outcomeGroup) {
	ctx := context.Background()
	for i := range groups {
		g := &groups[i]
		script, keys, args := s.outcomeCall(g.p, g.kind, g.items)
		cmd, acked, err := rcall.RunReplicated(ctx, s.rdb, script, keys, s.cfg.WaitReplicas, s.cfg.WaitTimeout, args...)
		if cmd == nil { // nothing was sent
			cmd = redis.NewCmd(ctx)
			cmd.SetErr(err)
		}
		g.cmd = cmd
		switch {
		case err != nil && cmd.Err() == nil:
			s.log.Warn("task outcomes written, WAIT for replicas failed", "queue", g.p.queue, "err", err)
		case err == nil && acked < s.cfg.WaitReplicas:
			s.log.Warn("task outcomes not confirmed by replicas in time; a failover now may lose them and run the tasks again",
				"queue", g.p.queue, "partition", g.p.k.T, "tasks", len(g.items), "replicas", acked,
				"want", s.cfg.WaitReplicas, "wait_timeout", s.cfg.WaitTimeout)
		}
	}
}
