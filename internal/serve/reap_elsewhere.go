package serve

import (
	"context"
	"strconv"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// maxReapCalls bounds the reap calls of one round trip of reapElsewhere.
const maxReapCalls = 256

// reapElsewhere gives back what the in-flight lists of stale workers
// hold in the partitions of every registered queue this worker does not
// serve; the heartbeat reaps its own partitions. A worker dropped from
// <prefix>:workers is never found stale again, so a list it left in a
// queue no finder served stayed there for good, its task never run: a
// worker of another queue had found it stale first (shardq doctor's
// orphaned-inflight). It reads the registry and the layouts, one call
// each, and runs reap with no expired lease to take (max 0) per
// partition, in bounded round trips. Only when every call succeeded may
// the heartbeat drop the workers.
func (s *Engine) reapElsewhere(ctx context.Context, stale []string) error {
	reg, err := s.rdb.HGetAll(ctx, keys.Queues(s.cfg.Prefix)).Result()
	if err != nil {
		return err
	}
	lays, err := layout.ReadAll(ctx, s.rdb, s.cfg.Prefix)
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, p := range s.partList() {
		mine[p.k.T] = true
	}
	var others []keys.Partition
	for q, v := range reg {
		n, _ := strconv.Atoi(v)
		if l, ok := lays[q]; ok {
			n = max(n, l.Route, l.Serve)
		}
		for i := range max(n, 1) {
			if k := keys.For(s.cfg.Prefix, q, i); !mine[k.T] {
				others = append(others, k)
			}
		}
	}
	// ARGV after T: now, the shard size, no expired lease, the workers
	tail := append([]any{s.cfg.now(), s.cfg.ShardSize, 0}, toAny(stale)...)
	for len(others) > 0 {
		chunk := others[:min(len(others), maxReapCalls)]
		others = others[len(chunk):]
		err := rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
			for _, k := range chunk {
				pipe.Run(ctx, script.Reap, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Expire(), k.Done(), k.Guard()},
					append([]any{k.T}, tail...)...)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
