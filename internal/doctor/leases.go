package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// stuckLease is a lease past its deadline held by a worker that is gone.
type stuckLease struct {
	id, raw string
	token   int64
	worker  string
}

// stuckLeases finds the leases of T:active whose deadline passed and whose
// worker is not in <prefix>:workers: a live worker's reap returns them in
// time, but with no worker serving the queue nothing does, and the task
// shows as active for ever.
func stuckLeases(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		var cands []stuckLease
		err := a.zscan(ctx, p.k.Active(), func(zs []redis.Z) error {
			var ids []string
			for _, z := range zs {
				if int64(z.Score) < a.now {
					ids = append(ids, z.Member.(string))
				}
			}
			if len(ids) == 0 {
				return nil
			}
			raws, err := a.rdb.HMGet(ctx, p.k.State(), ids...).Result()
			if err != nil {
				return err
			}
			for i, v := range raws {
				raw, ok := v.(string)
				if !ok {
					continue // no record: list-entries reports it
				}
				r, err := wire.DecodeRecord([]byte(raw))
				if err != nil || r.State != "active" || a.workers[r.Worker] {
					continue
				}
				cands = append(cands, stuckLease{id: ids[i], raw: raw, token: r.Token, worker: r.Worker})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range cands {
			// a second look: the same record, still leased, the worker still gone
			pl := a.rdb.Pipeline()
			rec := pl.HGet(ctx, p.k.State(), c.id)
			score := pl.ZScore(ctx, p.k.Active(), c.id)
			live := pl.ZScore(ctx, workersKey(a), c.worker)
			if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if rec.Val() != c.raw || score.Err() != nil || live.Err() == nil {
				continue
			}
			a.add(f, fmt.Sprintf("%s %s (worker %s gone)", p.where(), public(c.id), c.worker))
			if !a.opt.Repair {
				continue
			}
			k := p.k
			codes, err := script.Requeue.Run(ctx, a.rdb, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Guard()},
				k.T, a.opt.ShardSize, c.id, c.token).Int64Slice()
			if err != nil {
				return fmt.Errorf("requeue %s: %w", public(c.id), err)
			}
			if len(codes) == 1 && codes[0] == 1 {
				f.Repaired++
			}
		}
	}
	return nil
}

// orphanedInflight finds the in-flight lists (T:inflight:<worker>) of
// workers not in <prefix>:workers: the tasks a blocking move took and no
// claim leased. A live worker reaps the list of a worker whose heartbeat
// went stale; a worker that left the set some other way leaves its list.
func orphanedInflight(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		for _, w := range p.flight {
			if a.workers[w] {
				continue
			}
			items, err := a.rdb.LRange(ctx, p.k.Inflight(w), 0, -1).Result()
			if err != nil {
				return err
			}
			n := 0
			for _, m := range items {
				if m != dummy {
					n++
				}
			}
			if n == 0 {
				continue
			}
			if err := a.rdb.ZScore(ctx, workersKey(a), w).Err(); err == nil {
				continue // it came back
			} else if !errors.Is(err, redis.Nil) {
				return err
			}
			a.add(f, fmt.Sprintf("%s %s (%d tasks)", p.where(), p.k.Inflight(w), n))
			if !a.opt.Repair {
				continue
			}
			k := p.k
			// max 0: no expired lease nor kept task moves, only the list
			res, err := script.Reap.Run(ctx, a.rdb, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Expire(), k.Done(), k.Guard()},
				k.T, "", a.opt.ShardSize, 0, w).Int64Slice()
			if err != nil {
				return fmt.Errorf("reap %s: %w", w, err)
			}
			if len(res) > 1 && res[1] > 0 {
				f.Repaired++
			}
		}
	}
	return nil
}

// leased returns the public IDs of every task with a lease, in every
// partition.
func (a *audit) leased(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	for _, p := range a.parts {
		err := a.zscan(ctx, p.k.Active(), func(zs []redis.Z) error {
			for _, z := range zs {
				out[public(z.Member.(string))] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
