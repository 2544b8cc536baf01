package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// counters checks the counters and ranges a partition keeps against what
// its lists hold: every shard that holds items is within T:first..T:last
// (a pop never reaches one outside, so its tasks would never run);
// T:keyactive, where it exists, counts each group's leases in T:active;
// T:fn counts the tasks in the groups' lists and turns; each ranked feed's
// rank counter is at least its highest rank (else a reader paging by
// marker misses or repeats entries).
func counters(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		if err := a.shardRange(ctx, p, f); err != nil {
			return err
		}
		if err := a.keyActive(ctx, p, f); err != nil {
			return err
		}
		if err := a.fairCount(ctx, p, f); err != nil {
			return err
		}
		if err := a.feedRanks(ctx, p, f); err != nil {
			return err
		}
	}
	return nil
}

// shardRange reports the shards outside T:first..T:last that hold items.
func (a *audit) shardRange(ctx context.Context, p *part, f *Finding) error {
	if len(p.shards) == 0 {
		return nil
	}
	bounds := func() (int64, int64, error) {
		v, err := a.rdb.MGet(ctx, p.k.First(), p.k.Last()).Result()
		if err != nil {
			return 0, 0, err
		}
		n := func(x any) int64 {
			s, _ := x.(string)
			i, _ := strconv.ParseInt(s, 10, 64)
			return i
		}
		return n(v[0]), n(v[1]), nil
	}
	first, last, err := bounds()
	if err != nil {
		return err
	}
	for _, s := range p.shards {
		if s >= first && s <= last {
			continue
		}
		key := p.k.ShardPrefix() + strconv.FormatInt(s, 10)
		n, err := a.rdb.LLen(ctx, key).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		// a second look: the bounds may have moved to it
		if first, last, err = bounds(); err != nil {
			return err
		}
		if s >= first && s <= last {
			continue
		}
		a.add(f, fmt.Sprintf("%s shard %s (%d items) outside %d..%d", p.where(), key, n, first, last))
	}
	return nil
}

// keyActive compares T:keyactive with the leases of each group.
func (a *audit) keyActive(ctx context.Context, p *part, f *Finding) error {
	for try := 0; ; try++ {
		stored := map[string]int64{}
		err := a.hscan(ctx, p.k.KeyActive(), func(fs, vs []string) error {
			for i, g := range fs {
				n, _ := strconv.ParseInt(vs[i], 10, 64)
				stored[g] = n
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(stored) == 0 {
			return nil
		}
		counted := map[string]int64{}
		err = a.zscan(ctx, p.k.Active(), func(zs []redis.Z) error {
			ids := make([]string, len(zs))
			for i, z := range zs {
				ids[i] = z.Member.(string)
			}
			if len(ids) == 0 {
				return nil
			}
			raws, err := a.rdb.HMGet(ctx, p.k.State(), ids...).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			for _, v := range raws {
				if raw, ok := v.(string); ok {
					if r, err := wire.DecodeRecord([]byte(raw)); err == nil && r.State == "active" && r.Key != "" {
						counted[r.Key]++
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var diff []string
		for g, n := range stored {
			if counted[g] != n && !(n <= 0 && counted[g] == 0) {
				diff = append(diff, fmt.Sprintf("%s T:keyactive[%q] = %d, %d leases", p.where(), g, n, counted[g]))
			}
		}
		if len(diff) == 0 {
			return nil
		}
		if try == 1 {
			for _, d := range diff {
				a.add(f, d)
			}
			return nil
		}
		// leases move while they are counted: count again before reporting
	}
}

// fairBound bounds the groups with lists, and the items in turns, of a
// partition whose T:fn fairCount checks: it reads them in one MULTI.
const fairBound = 20_000

// fairCount compares T:fn with the tasks in the groups' lists (T:fq:*,
// the shards T:fk names) and turns (T:fo:<r> from T:fi's turn on,
// markers aside). It reads them all in one MULTI, so that what it
// compares is one instant's, with T:fk and T:fi, to know that the lists
// it read are all there were; it gives up, saying nothing, when they
// changed since it named the lists, or past fairBound.
func (a *audit) fairCount(ctx context.Context, p *part, f *Finding) error {
	fnKey, fkKey, fiKey := p.k.T+":fn", p.k.FairKeys(), p.k.T+":fi"
	for range 3 {
		pl := a.rdb.Pipeline()
		fn := pl.Get(ctx, fnKey)
		nk := pl.HLen(ctx, fkKey)
		fi := pl.Get(ctx, fiKey)
		if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if fn.Err() != nil && nk.Val() == 0 && fi.Err() != nil {
			return nil // no group has a task
		}
		if nk.Val() > fairBound {
			return nil
		}
		fk, err := a.rdb.HGetAll(ctx, fkKey).Result()
		if err != nil {
			return err
		}
		var lists []string
		for g, v := range fk {
			var first, last int64
			if _, err := fmt.Sscanf(v, "%d %d", &first, &last); err != nil || last-first > fairBound {
				return nil
			}
			for n := first; n <= last; n++ {
				lists = append(lists, p.k.T+":fq:"+g+":"+strconv.FormatInt(n, 10))
			}
		}
		var turns []string
		var items int64
		if fi.Err() == nil {
			var cur int64
			if _, err := fmt.Sscanf(fi.Val(), "%d", &cur); err != nil {
				return nil
			}
			for r := cur; ; r++ {
				key := p.k.T + ":fo:" + strconv.FormatInt(r, 10)
				n, err := a.rdb.LLen(ctx, key).Result()
				if err != nil {
					return err
				}
				if n == 0 && r > cur {
					break
				}
				if items += n; items > fairBound {
					return nil
				}
				turns = append(turns, key)
			}
		}
		// one instant: T:fn, the names' sources, every list
		var fn2, fi2 *redis.StringCmd
		var fk2 *redis.MapStringStringCmd
		var next *redis.IntCmd
		lens := make([]*redis.IntCmd, len(lists))
		ranges := make([]*redis.StringSliceCmd, len(turns))
		_, err = a.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			fn2, fi2, fk2 = pp.Get(ctx, fnKey), pp.Get(ctx, fiKey), pp.HGetAll(ctx, fkKey)
			for i, l := range lists {
				lens[i] = pp.LLen(ctx, l)
			}
			for i, l := range turns {
				ranges[i] = pp.LRange(ctx, l, 0, -1)
			}
			next = pp.Exists(ctx, p.k.T+":fo:"+strconv.Itoa(len(turns)+int(firstTurn(fi.Val()))))
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if fi2.Val() != fi.Val() || !sameMap(fk2.Val(), fk) || (len(turns) > 0 && next.Val() != 0) {
			continue // the lists changed since they were named: again
		}
		var n int64
		for _, c := range lens {
			n += c.Val()
		}
		for _, c := range ranges {
			for _, m := range c.Val() {
				if !strings.HasPrefix(m, "\x00") {
					n++
				}
			}
		}
		stored, _ := strconv.ParseInt(fn2.Val(), 10, 64)
		if stored != n {
			a.add(f, fmt.Sprintf("%s T:fn = %d, the groups' lists and turns hold %d", p.where(), stored, n))
		}
		return nil
	}
	return nil
}

// firstTurn reads the turn now from T:fi ("cur popped pass").
func firstTurn(fi string) int64 {
	var cur int64
	_, _ = fmt.Sscanf(fi, "%d", &cur)
	return cur
}

// sameMap reports whether a and b hold the same pairs.
func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// feedRanks checks that each ranked feed's counter (T:feed:rank,
// T:dead:rank, T:done:rank) is at least the highest rank in its feed.
func (a *audit) feedRanks(ctx context.Context, p *part, f *Finding) error {
	for _, feed := range []string{p.k.Feed(), p.k.Dead(), p.k.Done()} {
		for try := 0; ; try++ {
			pl := a.rdb.Pipeline()
			top := pl.ZRangeWithScores(ctx, feed, -1, -1)
			rank := pl.Get(ctx, keys.RankKey(feed))
			if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if len(top.Val()) == 0 {
				break
			}
			v := rank.Val()
			if i := strings.LastIndexByte(v, ':'); i >= 0 {
				v = v[i+1:] // "closed:<count>" while the partition is closed
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			if hi := int64(top.Val()[0].Score); hi <= n {
				break
			} else if try == 1 {
				a.add(f, fmt.Sprintf("%s %s: rank counter %d below its highest rank %d", p.where(), feed, n, hi))
				break
			}
		}
	}
	return nil
}
