// Package quota keeps a partitioned queue's concurrency and rate limits
// fleet-wide. A script cannot touch keys in two cluster slots, so each
// partition enforces a quota of its own (cq, rq in its limits hash, read by
// pop and claim), and the quotas are moved to where the demand is by
// rebalances: any worker may run one; one at a time runs per queue (a lock
// at the queue's quota home); each carries an epoch that fences the
// partitions against a rebalance that stalled and lost its lock.
//
// The invariant (docs/ARCHITECTURE.md, "Limits across partitions"): the
// home records, for each partition, a quota at least as large as the one
// the partition enforces, and the records never sum past the limit. A
// shrink is applied at the partition before it is recorded; a grow is
// recorded before the partition takes it; a crash between the two leaves a
// record above the partition's quota (capacity unused until the next
// rebalance re-reads the partitions), never below.
package quota

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// Queue names a partitioned queue.
type Queue struct {
	Prefix     string
	Name       string
	Partitions int
	ShardSize  int
	// Now is the time the scripts use, in ms ("" = the Redis server's
	// clock; tests that move a clock pass theirs, as the worker's scripts do).
	Now string
}

// Limits are the fleet-wide limits a rebalance splits; 0 = none.
type Limits struct {
	Concurrency int
	Rate        int
	Per         time.Duration
}

// lockTTL bounds how long a stalled rebalance keeps others out.
const lockTTL = 5 * time.Second

// Set stores new fleet-wide limits for q and splits them at once, evenly
// where there is no demand yet. It waits, within ctx, for a rebalance
// under way elsewhere to finish.
func Set(ctx context.Context, rdb redis.UniversalClient, q Queue, l Limits) error {
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		done, err := run(ctx, rdb, q, &l)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("set fleet-wide limits of %q: another rebalance holds the lock: %w", q.Name, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// Rebalance moves q's quotas toward the partitions' demand. It reports
// false, and changes nothing, when q has no fleet-wide limit or another
// rebalance is under way.
func Rebalance(ctx context.Context, rdb redis.UniversalClient, q Queue) (bool, error) {
	return run(ctx, rdb, q, nil)
}

// report is what one partition holds and needs, as quota_report says.
type report struct {
	cq, rq           int // quotas, codes.None: none
	running, started int
	backlog          int
}

func run(ctx context.Context, rdb redis.UniversalClient, q Queue, set *Limits) (bool, error) {
	home := keys.QuotaFor(q.Prefix, q.Name)
	args := []any{lockTTL.Milliseconds(), ""}
	if set != nil {
		per := set.Per
		if per <= 0 {
			per = time.Second
		}
		args = []any{lockTTL.Milliseconds(), "set", set.Concurrency, set.Rate, per.Milliseconds()}
	}
	lock, err := ints(script.QuotaLock.Run(ctx, rdb, []string{home.Lock(), home.Epoch(), home.Quota()}, args...))
	if err != nil {
		return false, fmt.Errorf("quota lock of %q: %w", q.Name, err)
	}
	epoch, lim := lock[0], Limits{Concurrency: lock[1], Rate: lock[2], Per: time.Duration(lock[3]) * time.Millisecond}
	if epoch == 0 {
		return false, nil
	}
	perMS := lim.Per.Milliseconds()
	// every partition the home has a record for, served or not: a caller
	// that has not read a grown layout yet would otherwise grant the
	// served ones what the others still hold, and a shrunk layout's
	// partitions keep their quotas until idle
	parts := make([]keys.Partition, max(q.Partitions, lock[4]))
	for i := range parts {
		parts[i] = keys.For(q.Prefix, q.Name, i)
	}

	// fence every partition at this epoch and read what it holds
	reps := make([]report, len(parts))
	cmds := make([]*redis.Cmd, len(parts))
	err = rcall.Pipelined(ctx, rdb, func(p *rcall.Pipe) error {
		for i, k := range parts {
			cmds[i] = p.Run(ctx, script.QuotaReport, []string{k.Limits(), k.Active(), k.RateLog(), k.First(), k.Last(), k.QuotaEpoch()},
				epoch, q.Now, perMS, k.ShardPrefix(), q.ShardSize)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("quota report of %q: %w", q.Name, err)
	}
	for i, cmd := range cmds {
		v, err := ints(cmd)
		if err != nil {
			return false, fmt.Errorf("quota report of %q: %w", q.Name, err)
		}
		if v[0] == 0 {
			return false, nil // a newer rebalance got here first: it does the work
		}
		reps[i] = report{cq: v[1], rq: v[2], running: v[3], started: v[4], backlog: v[5]}
	}

	cwant := targets(lim.Concurrency, reps, q.Partitions, func(r report) int { return r.running })
	rwant := targets(lim.Rate, reps, q.Partitions, func(r report) int { return r.started })

	// shrink first: a partition gives back before the record says so
	shrink := func(limit, have, want int) string {
		switch {
		case limit <= 0 && have >= 0:
			return "-"
		case limit > 0 && have < 0:
			return "0" // newly limited: keep what runs, start nothing until granted
		case limit > 0 && have > want:
			return strconv.Itoa(want)
		}
		return ""
	}
	if err := setQuotas(ctx, rdb, q, parts, epoch, perMS, reps, func(i int) (string, string) {
		return shrink(lim.Concurrency, reps[i].cq, cwant[i]), shrink(lim.Rate, reps[i].rq, rwant[i])
	}); err != nil {
		return false, fmt.Errorf("quota shrink of %q: %w", q.Name, err)
	}

	commit := []any{epoch, lim.Concurrency, lim.Rate, q.Partitions}
	for i, r := range reps {
		commit = append(commit, r.cq, cwant[i], r.rq, rwant[i])
	}
	granted, err := ints(script.QuotaCommit.Run(ctx, rdb, []string{home.Lock(), home.Quota()}, commit...))
	if err != nil {
		return false, fmt.Errorf("quota commit of %q: %w", q.Name, err)
	}
	if granted[0] == 0 {
		return false, nil // the lock expired under us: change nothing more
	}

	// grow: each partition takes what the home recorded for it
	grow := func(have, got int) string {
		if got > have && got >= 0 {
			return strconv.Itoa(got)
		}
		return ""
	}
	err = setQuotas(ctx, rdb, q, parts, epoch, perMS, reps, func(i int) (string, string) {
		return grow(reps[i].cq, granted[1+2*i]), grow(reps[i].rq, granted[2+2*i])
	})
	if err != nil {
		return false, fmt.Errorf("quota grow of %q: %w", q.Name, err)
	}
	return true, nil
}

// setQuotas runs quota_set on the partitions for which change returns
// something to set, in one pipeline, and writes the quotas they now hold
// into reps. A partition fenced by a newer epoch keeps its report.
func setQuotas(ctx context.Context, rdb redis.UniversalClient, q Queue, parts []keys.Partition, epoch int, perMS int64,
	reps []report, change func(i int) (cq, rq string)) error {
	type quotas struct{ cq, rq string }
	todo := map[int]quotas{}
	for i := range parts {
		if cq, rq := change(i); cq != "" || rq != "" {
			todo[i] = quotas{cq, rq}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	cmds := make([]*redis.Cmd, len(parts))
	err := rcall.Pipelined(ctx, rdb, func(p *rcall.Pipe) error {
		for i, c := range todo {
			k := parts[i]
			cmds[i] = p.Run(ctx, script.QuotaSet, []string{k.Limits(), k.Active(), k.RateLog(), k.QuotaEpoch()},
				epoch, q.Now, perMS, c.cq, c.rq)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		v, err := ints(cmd)
		if err != nil {
			return err
		}
		if v[0] == 1 {
			reps[i].cq, reps[i].rq = v[1], v[2]
		}
	}
	return nil
}

// targets splits limit over the partitions by demand (what each uses now
// plus its backlog): max-min fair, so a partition gets what it needs up to
// an equal level, and what no partition needs is spread evenly over the
// first served ones (those past them get their demand only, so that an
// idle one drops out), so a partition whose work arrives later can start
// some at once. No target is below what the partition uses now.
func targets(limit int, reps []report, served int, used func(report) int) []int {
	n := len(reps)
	out := make([]int, n)
	if limit <= 0 || n == 0 {
		return out
	}
	demand := make([]int, n)
	for i, r := range reps {
		demand[i] = min(used(r)+r.backlog, limit)
	}
	// water-filling: raise a common level until the limit is spent
	left := limit
	for {
		open := 0
		for i := range out {
			if out[i] < demand[i] {
				open++
			}
		}
		if open == 0 || left == 0 {
			break
		}
		step := max(left/open, 1)
		for i := range out {
			if left == 0 {
				break
			}
			if give := min(step, demand[i]-out[i], left); give > 0 {
				out[i] += give
				left -= give
			}
		}
	}
	// spread what nobody needs, evenly
	for i := 0; left > 0; i = (i + 1) % min(max(served, 1), n) {
		out[i]++
		left--
	}
	for i, r := range reps {
		out[i] = max(out[i], used(r))
	}
	return out
}

// ints reads a script's reply of integers.
func ints(cmd *redis.Cmd) ([]int, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}
