package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// semaphoreHolders finds the holders of the worker's Semaphore middleware
// (<prefix>:sem:<name>, holder "<task ID>:<attempt>" -> expiry) whose
// expiry has not come and whose task holds no lease in any partition: a
// handler holds its slot only while its task runs, so such a holder keeps
// a slot from the others until it expires.
func semaphoreHolders(ctx context.Context, a *audit, f *Finding) error {
	if len(a.sems) == 0 {
		return nil
	}
	type holder struct{ key, member string }
	var cands []holder
	var leased map[string]bool
	for _, key := range a.sems {
		err := a.zscan(ctx, key, func(zs []redis.Z) error {
			for _, z := range zs {
				if int64(z.Score) <= a.now {
					continue // expired: the next acquire drops it
				}
				cands = append(cands, holder{key, z.Member.(string)})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(cands) == 0 {
		return nil
	}
	for try := range 2 {
		var err error
		if leased, err = a.leased(ctx); err != nil {
			return err
		}
		var left []holder
		for _, c := range cands {
			id := c.member
			if i := strings.LastIndexByte(id, ':'); i > 0 {
				id = id[:i]
			}
			if !leased[id] {
				left = append(left, c)
			}
		}
		cands = left
		if try == 0 && len(cands) > 0 {
			// a second look at the holders still there: a task acquires
			// its slot after its lease, and releases it before its ack
			var still []holder
			for _, c := range cands {
				s, err := a.rdb.ZScore(ctx, c.key, c.member).Result()
				if errors.Is(err, redis.Nil) {
					continue
				} else if err != nil {
					return err
				}
				if int64(s) > a.now {
					still = append(still, c)
				}
			}
			cands = still
		}
	}
	for _, c := range cands {
		a.add(f, fmt.Sprintf("%s holder %s (no lease)", c.key, c.member))
		if a.opt.Repair {
			n, err := a.rdb.ZRem(ctx, c.key, c.member).Result()
			if err != nil {
				return err
			}
			f.Repaired += int(n)
		}
	}
	return nil
}

// quotaLocks finds the locks of a partitioned queue's quota rebalance
// ({<prefix>:<queue>:quota}:lock) without an expiry: quota_lock.lua sets
// one, so the worker that holds the lock may die; a lock without one stops
// every rebalance of the queue for ever.
func quotaLocks(ctx context.Context, a *audit, f *Finding) error {
	for _, key := range a.quotas {
		ttl, err := a.rdb.PTTL(ctx, key).Result()
		if err != nil {
			return err
		}
		if ttl != -1 {
			continue
		}
		a.add(f, key+" has no expiry")
		if a.opt.Repair {
			// the lock is the epoch a rebalance holds: delete only that one
			err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
				if ttl, err := tx.PTTL(ctx, key).Result(); err != nil || ttl != -1 {
					return err
				}
				_, err := tx.TxPipelined(ctx, func(pp redis.Pipeliner) error {
					pp.Del(ctx, key)
					return nil
				})
				if err == nil {
					f.Repaired++
				}
				return err
			}, key)
			if err != nil && !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
	}
	return nil
}
