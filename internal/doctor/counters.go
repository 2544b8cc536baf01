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

// fairCount compares T:fn with the tasks in the groups' lists (T:fq:*)
// and turns (T:fo:*, markers aside). The lists cannot be read in one
// instant, so a difference counts only when T:fn did not change while
// they were read, twice with the same result: under traffic the check
// may say nothing, never something false.
func (a *audit) fairCount(ctx context.Context, p *part, f *Finding) error {
	var fq, fo []string
	for _, l := range p.lists {
		rest := l[len(p.k.T):]
		switch {
		case strings.HasPrefix(rest, ":fq:"):
			fq = append(fq, l)
		case strings.HasPrefix(rest, ":fo:"):
			fo = append(fo, l)
		}
	}
	stored0, err := a.intKey(ctx, p.k.T+":fn")
	if err != nil || (stored0 == 0 && len(fq)+len(fo) == 0) {
		return err
	}
	var diffs []int64
	for range 2 {
		before, err := a.intKey(ctx, p.k.T+":fn")
		if err != nil {
			return err
		}
		var n int64
		pl := a.pipe(ctx)
		for _, l := range fq {
			var c *redis.IntCmd
			if err := pl.add(func(pp redis.Pipeliner) { c = pp.LLen(ctx, l) }, func() { n += c.Val() }); err != nil {
				return err
			}
		}
		if err := pl.flush(); err != nil {
			return err
		}
		for _, l := range fo {
			for start := int64(0); ; start += int64(a.opt.Page) {
				items, err := a.rdb.LRange(ctx, l, start, start+int64(a.opt.Page)-1).Result()
				if err != nil {
					return err
				}
				for _, m := range items {
					if !strings.HasPrefix(m, "\x00") {
						n++
					}
				}
				if len(items) < a.opt.Page {
					break
				}
			}
		}
		after, err := a.intKey(ctx, p.k.T+":fn")
		if err != nil {
			return err
		}
		if before != after || n == after {
			return nil // it moved, or it agrees
		}
		diffs = append(diffs, after-n)
	}
	if diffs[0] == diffs[1] {
		stored, _ := a.intKey(ctx, p.k.T+":fn")
		a.add(f, fmt.Sprintf("%s T:fn = %d, the groups' lists and turns hold %d", p.where(), stored, stored-diffs[1]))
	}
	return nil
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

// intKey reads a string key as a number, 0 when absent.
func (a *audit) intKey(ctx context.Context, key string) (int64, error) {
	n, err := a.rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}
