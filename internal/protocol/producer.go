package protocol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
)

// Live is how recent a worker's heartbeat must be for a producer to count
// it as running: twice the default lease, past which other workers reap a
// crashed one.
const Live = time.Minute

// ClaimForProducer is the claim a producer makes before its first write:
// Claim, and in the same round trip a look at the workers that heartbeat
// under prefix. A running worker that follows another major, or none (a
// 0.1.0 worker, older than the record), would send what v's producers
// write to dead, so the producer refuses while one runs, naming it and
// both versions (docs/operations.md, "Upgrading"). A worker whose last
// heartbeat is older than live has stopped, or crashed and waits to be
// reaped.
func ClaimForProducer(ctx context.Context, rdb redis.UniversalClient, prefix string, v Version, live time.Duration) error {
	var (
		set      *redis.StatusCmd
		now      *redis.TimeCmd
		beats    *redis.ZSliceCmd
		statuses *redis.MapStringStringCmd
	)
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetArgs(ctx, keys.Protocol(prefix), v.String(), redis.SetArgs{Mode: "NX", Get: true})
		now = p.Time(ctx)
		beats = p.ZRangeWithScores(ctx, keys.Workers(prefix), 0, -1)
		statuses = p.HGetAll(ctx, keys.WorkerStatus(prefix))
		return nil
	})
	if _, err := claimed(ctx, rdb, set, prefix, v); err != nil {
		return err
	}
	if err != nil && !errors.Is(err, redis.Nil) && !rcall.IsOOM(err) { // Nil: the SET recorded v; OOM: claimed read it
		return fmt.Errorf("protocol: read the workers of prefix %q: %w", prefix, err)
	}
	since := now.Val().Add(-live).UnixMilli()
	var old []string
	for _, z := range beats.Val() {
		id, _ := z.Member.(string)
		b, ok := statuses.Val()[id]
		if int64(z.Score) < since || !ok {
			continue // stopped, or not yet started: a starting worker claims itself
		}
		st, err := wire.DecodeWorkerStatus([]byte(b))
		if err != nil {
			continue // not a worker's status: nothing to refuse for
		}
		if wv, err := Parse(st.Protocol); err != nil || !wv.Compatible(v) {
			old = append(old, fmt.Sprintf("%s (%s, pid %d) follows %s", id, st.Host, st.PID, workerVersion(st.Protocol)))
		}
	}
	if len(old) > 0 {
		slices.Sort(old)
		more := ""
		if len(old) > 3 {
			more = fmt.Sprintf(" and %d more", len(old)-3)
			old = old[:3]
		}
		return fmt.Errorf("%w: this producer writes protocol %s, which running workers cannot read: worker %s%s; upgrade the workers first",
			ErrIncompatible, v, strings.Join(old, "; worker "), more)
	}
	return nil
}

// workerVersion names the protocol a worker's status says it follows.
func workerVersion(s string) string {
	if s == "" {
		return "no protocol version (shardq 0.1.0)"
	}
	return "protocol " + s
}
