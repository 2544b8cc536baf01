package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/wire"
)

// counters checks the counters and ranges a partition keeps against what
// its lists hold: every shard that holds items is within T:first..T:last
// (a pop never reaches one outside, so its tasks would never run), and
// T:keyactive, where it exists, counts each group's leases in T:active.
func counters(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		if err := a.shardRange(ctx, p, f); err != nil {
			return err
		}
		if err := a.keyActive(ctx, p, f); err != nil {
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
