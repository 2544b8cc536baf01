package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// badEntry is an entry of a set whose record disagrees.
type badEntry struct {
	set, id, why string
	rec          string
	hasRec       bool
	hasMsg       bool
}

// listEntries finds the entries whose record disagrees with where they
// are: a lease, schedule or retry entry without a record or message, or
// whose record names another state; a dead or succeeded feed entry (or a
// retention entry) without a record, or whose record names another state;
// a pending list entry whose record says it is not pending (it would run
// again, or again while it runs).
func listEntries(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		k := p.k
		sets := []struct{ key, state string }{
			{k.Active(), "active"}, {k.Scheduled(), "scheduled"}, {k.Retry(), "retry"},
			{k.Dead(), "dead"}, {k.Done(), "done"}, {k.Expire(), "done"},
		}
		var bad []badEntry
		for _, s := range sets {
			err := a.zscan(ctx, s.key, func(zs []redis.Z) error {
				ids := make([]string, len(zs))
				for i, z := range zs {
					ids[i] = z.Member.(string)
				}
				if len(ids) == 0 {
					return nil
				}
				pl := a.rdb.Pipeline()
				recs := pl.HMGet(ctx, k.State(), ids...)
				msgs := pl.HMGet(ctx, k.Msg(), ids...)
				if _, err := pl.Exec(ctx); err != nil {
					return err
				}
				for i, id := range ids {
					rec, hasRec := recs.Val()[i].(string)
					_, hasMsg := msgs.Val()[i].(string)
					e := badEntry{set: s.key, id: id, rec: rec, hasRec: hasRec, hasMsg: hasMsg}
					switch st := stateOf(rec); {
					case !hasRec:
						e.why = "no record"
					case st != s.state:
						e.why = "record says " + st
					case s.state != "dead" && s.state != "done" && !hasMsg:
						e.why = "no message"
					default:
						continue
					}
					bad = append(bad, e)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if err := a.pendingDisagree(ctx, p, &bad); err != nil {
			return err
		}
		for _, e := range bad {
			ok, err := a.confirmEntry(ctx, p, e)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			a.add(f, fmt.Sprintf("%s %s in %s: %s", p.where(), public(e.id), e.set, e.why))
			if a.opt.Repair && !e.hasRec && !e.hasMsg && !isList(e.set) {
				if err := a.rdb.ZRem(ctx, e.set, e.id).Err(); err != nil {
					return err
				}
				f.Repaired++
			}
		}
	}
	return nil
}

// isList reports whether key names a list (a shard, a group's list, a
// turn, a parked or in-flight list).
func isList(key string) bool {
	for i := len(key) - 1; i > 0; i-- {
		if key[i] == '}' {
			rest := key[i+1:]
			for _, p := range []string{":s:", ":fq:", ":fo:", ":k:", ":inflight:"} {
				if len(rest) >= len(p) && rest[:len(p)] == p {
					return true
				}
			}
			return false
		}
	}
	return false
}

// confirmEntry looks at e again in one MULTI: the record and message as
// they were, the entry still there (for a set).
func (a *audit) confirmEntry(ctx context.Context, p *part, e badEntry) (bool, error) {
	var rec *redis.StringCmd
	var msg *redis.BoolCmd
	var score *redis.FloatCmd
	_, err := a.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
		rec = pp.HGet(ctx, p.k.State(), e.id)
		msg = pp.HExists(ctx, p.k.Msg(), e.id)
		if !isList(e.set) {
			score = pp.ZScore(ctx, e.set, e.id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if score != nil && score.Err() != nil {
		return false, nil // gone from the set
	}
	hasRec := rec.Err() == nil
	if hasRec != e.hasRec || rec.Val() != e.rec {
		return false, nil
	}
	return isList(e.set) || msg.Val() == e.hasMsg, nil
}

// recordsInMemory bounds the records of a partition whose states
// pendingDisagree keeps in memory instead of looking each pending task up.
const recordsInMemory = 200_000

// pendingDisagree adds to bad the pending list entries whose record says
// they are not pending. With few records it reads them once (HSCAN) and
// looks nothing up per task; with many it looks each page's tasks up.
func (a *audit) pendingDisagree(ctx context.Context, p *part, bad *[]badEntry) error {
	n, err := a.rdb.HLen(ctx, p.k.State()).Result()
	if err != nil || n == 0 {
		return err // no record: no pending task can disagree with one
	}
	var other map[string]string // id -> record, for records not pending
	if n <= recordsInMemory {
		other = map[string]string{}
		err := a.hscan(ctx, p.k.State(), func(ids, raws []string) error {
			for i, raw := range raws {
				if stateOf(raw) != "pending" {
					other[ids[i]] = raw
				}
			}
			return nil
		})
		if err != nil || len(other) == 0 {
			return err
		}
	}
	return a.pendingEntries(ctx, p, other == nil, func(ents []entry) error {
		for _, e := range ents {
			if other != nil {
				e.rec, e.hasRec = other[e.id]
			}
			if e.hasRec && stateOf(e.rec) != "pending" {
				*bad = append(*bad, badEntry{set: e.list, id: e.id, rec: e.rec, hasRec: true, why: "pending, record says " + stateOf(e.rec)})
			}
		}
		return nil
	})
}
