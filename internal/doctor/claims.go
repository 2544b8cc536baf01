package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// live is the set of record states whose task may still run.
var live = map[string]bool{"pending": true, "scheduled": true, "active": true, "retry": true}

// uniquenessLocks finds the uniqueness locks held until their task
// finishes (no TTL) whose task is not live: no record in a live state and
// no entry in a pending list. Such a lock refuses every enqueue of its
// uniqueness ID for ever. A lock for a time (Unique(ttl)) outlives its
// task by design, and expires.
func uniquenessLocks(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		type lock struct{ key, id string }
		var cands []lock
		for lo := 0; lo < len(p.unique); lo += a.opt.Page {
			chunk := p.unique[lo:min(lo+a.opt.Page, len(p.unique))]
			pl := a.rdb.Pipeline()
			gets := make([]*redis.StringCmd, len(chunk))
			ttls := make([]*redis.DurationCmd, len(chunk))
			for i, k := range chunk {
				gets[i] = pl.Get(ctx, k)
				ttls[i] = pl.PTTL(ctx, k)
			}
			if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			var ids []string
			var held []lock
			for i, k := range chunk {
				if gets[i].Err() != nil || ttls[i].Val() != -1 {
					continue
				}
				held = append(held, lock{k, gets[i].Val()})
				ids = append(ids, gets[i].Val())
			}
			if len(held) == 0 {
				continue
			}
			recs, err := a.rdb.HMGet(ctx, p.k.State(), ids...).Result()
			if err != nil {
				return err
			}
			for i, l := range held {
				if raw, ok := recs[i].(string); ok && live[stateOf(raw)] {
					continue
				}
				cands = append(cands, l)
			}
		}
		if len(cands) == 0 {
			continue
		}
		// a task without a record may wait in a pending list: look there,
		// then at the lock and the record again, then in the lists written
		// since the first look
		want := map[string]bool{}
		for _, c := range cands {
			want[c.id] = true
		}
		for try := range 2 {
			if try == 1 {
				if err := a.rescan(ctx, p); err != nil {
					return err
				}
			}
			err := a.pendingEntries(ctx, p, false, func(ents []entry) error {
				for _, e := range ents {
					delete(want, e.id)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if try == 1 || len(want) == 0 {
				break
			}
			for _, c := range cands {
				if !want[c.id] {
					continue
				}
				still, err := a.lockOfDeadTask(ctx, p, c.key, c.id)
				if err != nil {
					return err
				}
				if !still {
					delete(want, c.id)
				}
			}
		}
		for _, c := range cands {
			if !want[c.id] {
				continue
			}
			a.add(f, fmt.Sprintf("%s %s held by %s", p.where(), c.key, public(c.id)))
			if !a.opt.Repair {
				continue
			}
			err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
				v, err := tx.Get(ctx, c.key).Result()
				if err != nil || v != c.id {
					return nil
				}
				raw, err := tx.HGet(ctx, p.k.State(), c.id).Result()
				if err == nil && live[stateOf(raw)] {
					return nil // it runs again now
				}
				_, err = tx.TxPipelined(ctx, func(pp redis.Pipeliner) error {
					pp.Del(ctx, c.key)
					return nil
				})
				if err == nil {
					f.Repaired++
				}
				return err
			}, c.key, p.k.State())
			if err != nil && !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
	}
	return nil
}

// idClaims finds the hashes of TaskID claims that never expire. A claim
// outlives its task by design (it refuses the same ID within IDTTL), so
// a claim whose task finished is no violation; but the engine gives each
// bucket's hash an expiry (lua/engine/include/claim_buckets.lua), and one
// without refuses its IDs for ever.
func idClaims(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		for lo := 0; lo < len(p.claims); lo += a.opt.Page {
			chunk := p.claims[lo:min(lo+a.opt.Page, len(p.claims))]
			pl := a.rdb.Pipeline()
			ttls := make([]*redis.DurationCmd, len(chunk))
			for i, k := range chunk {
				ttls[i] = pl.PTTL(ctx, k)
			}
			if _, err := pl.Exec(ctx); err != nil {
				return err
			}
			for i, k := range chunk {
				if ttls[i].Val() != -1 {
					continue
				}
				a.add(f, fmt.Sprintf("%s %s has no expiry", p.where(), k))
				if !a.opt.Repair {
					continue
				}
				at, ok := claimExpiry(k)
				if !ok {
					continue
				}
				// NX: only when it still has none
				if set, err := a.rdb.Do(ctx, "pexpireat", k, at, "nx").Int(); err != nil {
					return err
				} else if set == 1 {
					f.Repaired++
				}
			}
		}
	}
	return nil
}

// claimExpiry returns when the engine makes the claims hash key expire:
// T:ids:<width>:<bucket>:<shard> expires a claim's ttl (two widths) after
// its bucket ends.
func claimExpiry(key string) (int64, bool) {
	i := strings.LastIndex(key, ":ids:")
	if i < 0 {
		return 0, false
	}
	parts := strings.Split(key[i+len(":ids:"):], ":")
	if len(parts) != 3 {
		return 0, false
	}
	w, err1 := strconv.ParseInt(parts[0], 10, 64)
	b, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || w <= 0 {
		return 0, false
	}
	return (b+1)*w + 2*w + 1, true
}

// lockOfDeadTask reports whether lock key still names id, without a TTL,
// and id has no record in a live state.
func (a *audit) lockOfDeadTask(ctx context.Context, p *part, key, id string) (bool, error) {
	pl := a.rdb.Pipeline()
	get := pl.Get(ctx, key)
	ttl := pl.PTTL(ctx, key)
	rec := pl.HGet(ctx, p.k.State(), id)
	if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if get.Err() != nil || get.Val() != id || ttl.Val() != -1 {
		return false, nil
	}
	return rec.Err() != nil || !live[stateOf(rec.Val())], nil
}
