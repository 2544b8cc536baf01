package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// home returns the sorted set where a record in state st must be a
// member, or "" for pending (a list) and states that name none.
func home(k keys.Partition, st string) string {
	switch st {
	case "active":
		return k.Active()
	case "scheduled":
		return k.Scheduled()
	case "retry":
		return k.Retry()
	case "dead":
		return k.Dead()
	case "done":
		return k.Done()
	}
	return ""
}

// orphan is a record found where its state says it is not.
type orphan struct {
	id, raw string
	rec     *wire.Record
}

// orphanedRecords finds the records of T:state that sit in no list, lease
// or schedule: a task in state active not in T:active, scheduled or retry
// not in its set, dead or done not in its feed, pending in no pending list.
// Such a task never runs again, nor shows in a listing. A record that does
// not decode is one too.
func orphanedRecords(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		var found []orphan
		pending := map[string]string{}
		err := a.hscan(ctx, p.k.State(), func(ids, raws []string) error {
			bySet := map[string][]int{}
			for i, raw := range raws {
				st := stateOf(raw)
				switch {
				case st == "pending":
					pending[ids[i]] = raw
				case home(p.k, st) != "":
					set := home(p.k, st)
					bySet[set] = append(bySet[set], i)
				default:
					found = append(found, orphan{id: ids[i], raw: raw})
				}
			}
			pl := a.pipe(ctx)
			for set, idx := range bySet {
				members := make([]string, len(idx))
				for j, i := range idx {
					members[j] = ids[i]
				}
				var cmd *redis.Cmd
				err := pl.add(func(pp redis.Pipeliner) { cmd = zmscore(ctx, pp, set, members) }, func() {
					for j, s := range cmd.Val().([]any) {
						if s == nil {
							found = append(found, orphan{id: ids[idx[j]], raw: raws[idx[j]]})
						}
					}
				})
				if err != nil {
					return err
				}
			}
			return pl.flush()
		})
		if err != nil {
			return err
		}
		// a pending record must name a task in one of the pending lists;
		// look twice, since a task may move between lists as they are read,
		// the second time in the lists written since
		for try := range 2 {
			if len(pending) == 0 {
				break
			}
			if try == 1 {
				if err := a.rescan(ctx, p); err != nil {
					return err
				}
			}
			err := a.pendingEntries(ctx, p, false, func(ents []entry) error {
				for _, e := range ents {
					delete(pending, e.id)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for id, raw := range pending {
			found = append(found, orphan{id: id, raw: raw})
		}
		confirmed, err := a.confirmOrphans(ctx, p, found)
		if err != nil {
			return err
		}
		for _, o := range confirmed {
			st := "undecodable"
			if o.rec != nil {
				st = o.rec.State
			}
			a.add(f, fmt.Sprintf("%s %s (record says %s)", p.where(), public(o.id), st))
			if a.opt.Repair && o.rec != nil {
				ok, err := a.repairOrphan(ctx, p, o)
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

// zmscore queues a ZMSCORE: its reply is a slice with nil for each
// member the set does not hold.
func zmscore(ctx context.Context, pp redis.Pipeliner, key string, members []string) *redis.Cmd {
	args := make([]any, 0, 2+len(members))
	args = append(args, "zmscore", key)
	for _, m := range members {
		args = append(args, m)
	}
	return pp.Do(ctx, args...)
}

// confirmOrphans reads each candidate again: its record unchanged and its
// set (for states with one) still without it.
func (a *audit) confirmOrphans(ctx context.Context, p *part, cands []orphan) ([]orphan, error) {
	var out []orphan
	for lo := 0; lo < len(cands); lo += a.opt.Page {
		chunk := cands[lo:min(lo+a.opt.Page, len(cands))]
		pl := a.rdb.Pipeline()
		recs := make([]*redis.StringCmd, len(chunk))
		scores := make([]*redis.FloatCmd, len(chunk))
		for i, o := range chunk {
			recs[i] = pl.HGet(ctx, p.k.State(), o.id)
			if set := home(p.k, stateOf(o.raw)); set != "" {
				scores[i] = pl.ZScore(ctx, set, o.id)
			}
		}
		if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		for i, o := range chunk {
			if recs[i].Val() != o.raw || (scores[i] != nil && scores[i].Err() == nil) {
				continue
			}
			if r, err := wire.DecodeRecord([]byte(o.raw)); err == nil {
				o.rec = r
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// repairOrphan puts a runnable orphan back where its state says, under a
// WATCH of T:state so that a task that moved since it was read is left
// alone: an active one into T:active, then requeue.lua gives it back to
// pending without costing its attempt; a pending one through T:scheduled,
// due now, then forward.lua; scheduled and retry into their sets at their
// due time; a dead one into the dead feed. A task without its message
// cannot run and is left, as is a succeeded one.
func (a *audit) repairOrphan(ctx context.Context, p *part, o orphan) (bool, error) {
	st := o.rec.State
	if st == "done" {
		return false, nil
	}
	if !a.requeueLoaded {
		// EVALSHA inside MULTI cannot fall back to EVAL
		if err := script.Requeue.Load(ctx, a.rdb); err != nil {
			return false, err
		}
		a.requeueLoaded = true
	}
	k := p.k
	size := strconv.Itoa(a.opt.ShardSize)
	done := false
	var requeued *redis.Cmd
	err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
		raw, err := tx.HGet(ctx, k.State(), o.id).Result()
		if err != nil || raw != o.raw {
			return nil // gone or changed: not ours to touch
		}
		if n, err := tx.HExists(ctx, k.Msg(), o.id).Result(); err != nil || !n {
			return err
		}
		rank, err := tx.Get(ctx, keys.RankKey(k.Dead())).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			switch st {
			case "active":
				pp.ZAdd(ctx, k.Active(), redis.Z{Score: 0, Member: o.id})
				requeued = script.Requeue.EvalSha(ctx, pp, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Guard()},
					k.T, size, o.id, o.rec.Token)
			case "pending":
				pp.ZAdd(ctx, k.Scheduled(), redis.Z{Score: 0, Member: o.id})
			case "scheduled", "retry":
				pp.ZAdd(ctx, home(k, st), redis.Z{Score: float64(o.rec.NextAt), Member: o.id})
			case "dead":
				// the feed's next rank: the rank key is watched too
				pp.Incr(ctx, keys.RankKey(k.Dead()))
				pp.ZAdd(ctx, k.Dead(), redis.Z{Score: float64(rank + 1), Member: o.id})
			}
			return nil
		})
		if err == nil {
			done = true
			if requeued != nil {
				codes, _ := requeued.Int64Slice()
				done = len(codes) == 1 && codes[0] == 1
			}
		}
		return err
	}, k.State(), keys.RankKey(k.Dead()))
	if errors.Is(err, redis.TxFailedErr) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if done && st == "pending" {
		if err := a.forward(ctx, p); err != nil {
			return false, err
		}
	}
	return done, nil
}

// forward runs forward.lua on p: due scheduled and retrying tasks go to
// pending, as a worker's forwarder would move them.
func (a *audit) forward(ctx context.Context, p *part) error {
	k := p.k
	return script.Forward.Run(ctx, a.rdb, []string{k.Scheduled(), k.Retry(), k.Msg(), k.State(), k.First(), k.Last(), k.Guard()},
		k.ShardPrefix(), "", a.opt.ShardSize, a.opt.Page).Err()
}
