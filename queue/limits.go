package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/limits"
	"github.com/shardq/shardq/internal/rcall"
)

// Limits caps how a queue's tasks start. They are enforced when workers
// dequeue, atomically in Redis and across every worker process, so a task
// never holds a worker slot while it waits for a limit. They are stored in
// Redis and read at every dequeue: SetLimits takes effect at once, with no
// restart. On a queue of several partitions they hold across all of them:
// concurrency and rate are split into per-partition quotas that workers
// move to where the tasks wait (within about a second), and the tasks of a
// group all go to one partition.
type Limits struct {
	// Concurrency is how many tasks of the queue may run at once (0 = no
	// limit). A crashed worker's slots come back when their leases expire.
	Concurrency int
	// Rate is how many tasks may start per Per (0 = no limit); Per
	// defaults to one second. No window of length Per holds more starts.
	Rate int
	Per  time.Duration
	// GroupConcurrency is how many tasks with the same Group may run
	// at once (0 = no limit). A group at it sits out its turns: its tasks
	// wait, in order, without holding a worker slot, while tasks of other
	// groups run. Set while a group's tasks run, it counts the tasks leased
	// from then on.
	GroupConcurrency int
	// MaxDepth caps how many tasks may wait in the queue (pending, held
	// for their group, scheduled and retrying; 0 = no cap). An enqueue
	// over it fails with ErrQueueFull, or waits for room with WaitForRoom.
	// The check is atomic with the push, so concurrent producers never pass
	// it; a running task that comes back (a retry, an expired lease) is
	// never refused, so the depth can pass it by at most the tasks running.
	// On a queue with several partitions each partition holds its share
	// (MaxDepth / partitions, the remainder to the first ones), so a queue
	// whose tasks spread unevenly can refuse a task before the total
	// reaches MaxDepth. Producers cache for a second that a queue has no
	// MaxDepth, so a new one applies to them within a second.
	MaxDepth int
	// GroupRate is how many tasks with the same Group may start per
	// Per (0 = no limit): no window of length Per holds more starts of one
	// group. A group at it sits out its turns until the window lets it start
	// one more; its tasks wait, in order, holding no worker slot, while
	// tasks of other groups run.
	GroupRate int
	// GroupMaxDepth caps how many tasks of one Group may wait in
	// the queue, enqueued and never started (0 = no cap): an enqueue over
	// it fails with ErrQueueFull, as over MaxDepth, while other groups' tasks
	// get in. Checked atomically with the push, per partition (each
	// partition holds up to GroupMaxDepth of a group). The counts are kept only
	// while the limit is set, so tasks enqueued before it was set are not
	// counted.
	GroupMaxDepth int
}

func (l Limits) validate(queue string) error {
	if err := limits.Check(queue, limits.Values(l)); err != nil {
		return fmt.Errorf("%w: %w", errInvalidOption, err)
	}
	return nil
}

// Group gives the task a group (a tenant, a customer, an API
// account) for the queue's Limits.GroupConcurrency. On a queue of several
// partitions the group also picks the task's partition, so every task of a
// group meets the group's limit in one place.
func Group(key string) Option {
	return func(o *options) error {
		if err := checkName(key); err != nil {
			return fmt.Errorf("%w: Group(%q): %s", errInvalidOption, key, err)
		}
		o.key = key
		return nil
	}
}

// SetLimits stores the limits of queue; workers apply them at their next
// dequeue. Limits may come before the queue's first task or worker: a
// queue the registry does not know yet is registered, with the partitions
// the Inspector's Config gives it.
func (i *Inspector) SetLimits(ctx context.Context, queue string, l Limits) error {
	if err := l.validate(queue); err != nil {
		return err
	}
	n, err := i.partitions(ctx, queue)
	if errors.Is(err, errQueueNotFound) {
		n = i.cfg.partitions(queue)
		err = rcall.Do(ctx, i.rdb, func() error {
			return i.rdb.HSetNX(ctx, keys.Queues(i.cfg.Prefix), queue, n).Err()
		})
	}
	if err != nil {
		return err
	}
	return i.writeLimits(ctx, queue, n, l)
}

// writeLimits writes l over queue's n partitions: fleet-wide quotas when
// n > 1, else the limits themselves.
func (i *Inspector) writeLimits(ctx context.Context, queue string, n int, l Limits) error {
	var err error
	if n > 1 {
		err = rcall.Do(ctx, i.rdb, func() error {
			return limits.WriteFleetWide(ctx, i.rdb, i.cfg.Prefix, queue, n, i.cfg.ShardSize, limits.Values(l))
		})
	} else {
		err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, _ int, k keys.Partition) {
			limits.Write(ctx, p, k, limits.Values(l))
		})
	}
	if err != nil {
		return fmt.Errorf("set limits of %q: %w", queue, err)
	}
	return nil
}

// LimitInfo is a queue's limits and what holds and waits for them.
type LimitInfo struct {
	Queue  string
	Limits Limits
	// Running is the number of tasks holding a concurrency slot.
	Running int64
	// Started is the number of task starts the rate limit counts now.
	Started int64
	// Waiting is the number of tasks held for their group: the
	// group is at GroupConcurrency or GroupRate, or paused. QueueInfo.Waiting
	// counts the same tasks.
	Waiting int64
	// Groups holds, for up to 1,000 groups a partition, how many of their
	// tasks run and wait: the groups with the most tasks waiting. Running
	// there is what GroupConcurrency counts, 0 without one; Inspector.Groups
	// counts a group's running tasks either way. Without a group limit, a
	// group whose tasks are all placed in turns shows the tasks placed at
	// its last enqueue as Waiting; Inspector.Groups counts them exactly.
	Groups map[string]GroupInfo
	// Depth is, with a MaxDepth, the tasks waiting in the queue as MaxDepth
	// counts them (pending, parked, scheduled, retrying), over every
	// partition; 0 without one.
	Depth int64
}

// LimitInfo returns queue's limits and their holders, summed over its
// partitions (one pipelined round trip, with one for the server's time).
func (i *Inspector) LimitInfo(ctx context.Context, queue string) (*LimitInfo, error) {
	if err := checkQueueName(queue); err != nil {
		return nil, err
	}
	n, err := i.partitions(ctx, queue)
	if errors.Is(err, errQueueNotFound) {
		n, err = i.cfg.partitions(queue), nil
	}
	if err != nil {
		return nil, fmt.Errorf("limit info of %q: %w", queue, err)
	}
	type partCmds struct {
		lim           *redis.MapStringStringCmd
		running       *redis.IntCmd
		started       *redis.IntCmd
		parked        *redis.StringCmd
		active, waits *redis.ScanCmd
		held          *redis.StringCmd
		backlogs      *redis.ZSliceCmd
	}
	cmds := make([]partCmds, n)
	var home *redis.MapStringStringCmd
	err = rcall.Do(ctx, i.rdb, func() error {
		now, err := i.rdb.Time(ctx).Result()
		if err != nil {
			return err
		}
		// the rate window is per's; a partition without one counts 1s
		lim0, err := i.rdb.HGet(ctx, keys.For(i.cfg.Prefix, queue, 0).Limits(), "per").Int64()
		if err != nil && err != redis.Nil {
			return err
		}
		per := cmp.Or(lim0, 1000)
		pipe := i.rdb.Pipeline()
		for part := range n {
			k := keys.For(i.cfg.Prefix, queue, part)
			cmds[part] = partCmds{
				lim:     pipe.HGetAll(ctx, k.Limits()),
				running: pipe.ZCard(ctx, k.Active()),
				started: pipe.ZCount(ctx, k.RateLog(), strconv.FormatInt(now.UnixMilli()-per, 10), "+inf"),
				parked:  pipe.Get(ctx, k.ParkedCount()),
				active:  pipe.HScan(ctx, k.KeyActive(), 0, "", 1000),
				waits:   pipe.HScan(ctx, k.KeyWaiting(), 0, "", 1000),
				// the tasks held for their groups, and the busiest groups' backlogs
				held:     pipe.Get(ctx, k.FairHeld()),
				backlogs: pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: k.FairBacklog(), Start: 0, Stop: 999, Rev: true}),
			}
		}
		if n > 1 {
			home = pipe.HGetAll(ctx, keys.QuotaFor(i.cfg.Prefix, queue).Quota())
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("limit info of %q: %w", queue, err)
	}
	info := &LimitInfo{Queue: queue, Groups: map[string]GroupInfo{}}
	lim := cmds[0].lim.Val()
	info.Limits = Limits{Concurrency: atoi(lim["concurrency"]), Rate: atoi(lim["rate"]),
		Per: time.Duration(atoi(lim["per"])) * time.Millisecond, GroupConcurrency: atoi(lim["keyconc"]),
		MaxDepth: atoi(lim["maxdepth"]), GroupRate: atoi(lim["keyrate"]), GroupMaxDepth: atoi(lim["keymaxdepth"])}
	if home != nil {
		h := home.Val()
		info.Limits.Concurrency, info.Limits.Rate = atoi(h["conc"]), atoi(h["rate"])
	}
	if info.Limits.Rate == 0 && info.Limits.GroupRate == 0 {
		info.Limits.Per = 0 // no rate limit: the stored default window means nothing
	}
	if info.Limits.MaxDepth > 0 {
		qi, err := i.QueueInfo(ctx, queue)
		if err != nil {
			return nil, fmt.Errorf("limit info of %q: %w", queue, err)
		}
		info.Depth = qi.Pending + qi.Waiting + qi.Scheduled + qi.Retry
	}
	for _, c := range cmds {
		info.Running += c.running.Val()
		info.Started += c.started.Val()
		w, _ := strconv.ParseInt(c.parked.Val(), 10, 64)
		info.Waiting += w
		w, _ = strconv.ParseInt(c.held.Val(), 10, 64)
		info.Waiting += max(w, 0)
		for _, z := range c.backlogs.Val() {
			key, _ := z.Member.(string)
			ki := info.Groups[key]
			ki.Waiting += int64(z.Score)
			info.Groups[key] = ki
		}
		av, _ := c.active.Val()
		wv, _ := c.waits.Val()
		for key, v := range pairs(av) {
			ki := info.Groups[key]
			x, _ := strconv.ParseInt(v, 10, 64)
			ki.Running += x
			info.Groups[key] = ki
		}
		for key, v := range pairs(wv) {
			ki := info.Groups[key]
			x, _ := strconv.ParseInt(v, 10, 64)
			ki.Waiting += x
			info.Groups[key] = ki
		}
	}
	return info, nil
}

// pairs turns an HSCAN page [field, value, ...] into a map.
func pairs(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for j := 0; j+1 < len(kv); j += 2 {
		m[kv[j]] = kv[j+1]
	}
	return m
}
