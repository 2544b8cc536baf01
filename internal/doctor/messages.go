package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// orphanedMessages finds the message copies of T:msg whose task has no
// record and is in no lease, schedule or feed: the scripts write and
// delete a task's copy with its record (a pending task holds its message
// in its list), so such a copy is never read again, and only takes
// memory.
func orphanedMessages(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		k := p.k
		sets := []string{k.Active(), k.Scheduled(), k.Retry(), k.Dead(), k.Done()}
		var cands []string
		err := a.hscan(ctx, k.Msg(), func(ids, _ []string) error {
			if len(ids) == 0 {
				return nil
			}
			pl := a.rdb.Pipeline()
			recs := pl.HMGet(ctx, k.State(), ids...)
			scores := make([]*redis.Cmd, len(sets))
			for i, s := range sets {
				scores[i] = zmscore(ctx, pl, s, ids)
			}
			if _, err := pl.Exec(ctx); err != nil {
				return err
			}
		next:
			for i, id := range ids {
				if recs.Val()[i] != nil {
					continue
				}
				for _, s := range scores {
					if v, _ := s.Val().([]any); len(v) > i && v[i] != nil {
						continue next
					}
				}
				cands = append(cands, id)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range cands {
			// a second look, in one MULTI: still a copy, still no record,
			// in no set
			var st, msg *redis.BoolCmd
			var in []*redis.FloatCmd
			_, err := a.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
				st = pp.HExists(ctx, k.State(), id)
				msg = pp.HExists(ctx, k.Msg(), id)
				for _, s := range sets {
					in = append(in, pp.ZScore(ctx, s, id))
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if st.Val() || !msg.Val() {
				continue
			}
			found := false
			for _, c := range in {
				found = found || c.Err() == nil
			}
			if found {
				continue
			}
			a.add(f, fmt.Sprintf("%s %s", p.where(), public(id)))
			if a.opt.Repair {
				ok, err := a.dropMessage(ctx, p, id, sets)
				if err != nil {
					return err
				}
				if ok {
					f.Repaired++
				}
			}
		}
	}
	return nil
}

// dropMessage deletes id's copy from T:msg if, under a WATCH of T:state
// and the sets, the task still has no record and is in none of them.
func (a *audit) dropMessage(ctx context.Context, p *part, id string, sets []string) (bool, error) {
	done := false
	err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
		if has, err := tx.HExists(ctx, p.k.State(), id).Result(); err != nil || has {
			return err
		}
		for _, s := range sets {
			if err := tx.ZScore(ctx, s, id).Err(); err == nil {
				return nil
			} else if !errors.Is(err, redis.Nil) {
				return err
			}
		}
		_, err := tx.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			pp.HDel(ctx, p.k.Msg(), id)
			return nil
		})
		done = err == nil
		return err
	}, append([]string{p.k.State()}, sets...)...)
	if errors.Is(err, redis.TxFailedErr) {
		return false, nil
	}
	return done, err
}
