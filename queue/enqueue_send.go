package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// The enqueue pipeline's last stage, send: one script call per group, all
// of them in one round trip, their replies read into the batch's infos
// and errs. Its options:
//   - a single Enqueue's plain task (group.single) goes by the
//     single-task call, enqueue_one.lua with its partition's tail shard
//     guessed, or waits in line for a call in flight and goes out with
//     the line (enqueue_send_one.go, enqueue_send_coalesce.go);
//   - under Config.WaitReplicas each group's call goes with a WAIT to its
//     partition's master (enqueue_send_replicated.go);
//   - groups Redis refused unrun are sent again (refusedPatience).

// send runs one enqueue script per group, in one pipeline, bounded by ctx.
// Groups Redis refused without running them (TRYAGAIN while their slot
// migrates, CLUSTERDOWN during a failover) are sent again, with a growing
// wait, for up to refusedPatience; a group whose reply was lost is never
// resent. It returns the error that left the outcome unknown.
func (c *Client) send(ctx context.Context, groups []*group, b *batch) error {
	if c.cfg.WaitReplicas > 0 {
		return c.sendReplicated(ctx, groups, b.infos, b.errs)
	}
	if len(groups) == 1 && groups[0].single && !groups[0].capped {
		if refused, err := c.sendOne(ctx, groups[0], b); !refused {
			return err
		}
		// refused unrun (a slot migrating, a failover) or by a draining
		// partition: the batch call below tries again, then reroute
	}
	giveUp := time.Now().Add(refusedPatience)
	for attempt := 1; ; attempt++ {
		refused, err := c.sendOnce(ctx, groups, b.infos, b.errs)
		if err == nil || len(refused) == 0 || !time.Now().Before(giveUp) {
			return err
		}
		if serr := rcall.Sleep(ctx, min(time.Duration(attempt)*refusedWait, refusedMaxWait)); serr != nil {
			return err
		}
		groups = refused
	}
}

// sendOne sends g, a single Enqueue's plain task to a partition whose
// route this client knows, by enqueue_one.lua with the partition's tail
// shard guessed from the previous reply (three Redis commands), or, when
// the client has lineDepth calls in flight and one of them is the
// partition's, in line with the other calls that wait for it
// (enqueue_send_coalesce.go). refused reports a call Redis refused unrun,
// or a closed partition: send tries again the general way, and reroute
// routes again.
func (c *Client) sendOne(ctx context.Context, g *group, b *batch) (refused bool, err error) {
	p := &g.tasks[0]
	pc := c.prepared(g.queue, g.partition)
	if !c.cfg.NoCoalescing {
		if w := pc.line.Join(ctx, p, c.lineDepth, &c.inFlight); w != nil { // wait in line
			b.infos[p.index], err = c.await(ctx, pc, w)
			return false, err
		}
		defer c.leave(pc)
	}
	guess := pc.tail.Load()
	f := pc.frames.Get().(*plainFrame)
	f.set(pc.shardKey(guess), p.msg)
	cmd, inFlight, err := c.runPlain(ctx, pc, f)
	if !inFlight {
		f.clear()
		pc.frames.Put(f)
	}
	if err != nil {
		rcall.Reroute(c.rdb, err) // a cluster's slot map may be stale
		if ctx.Err() == nil && rcall.IsRefused(err) {
			return true, err
		}
		return false, fmt.Errorf("enqueue %q: %w", g.queue, redisError(err))
	}
	reply, err := cmd.Int64()
	if err == nil && reply == codes.EnqClosed {
		return true, nil // the partition drains
	}
	switch {
	case err == nil && reply == codes.EnqGuessed: // into the guessed shard, still the tail
		pc.learn(guess, guess, true)
	case err != nil || reply < 0:
		return false, fmt.Errorf("enqueue %q: unexpected reply %v: %v", g.queue, cmd.Val(), err)
	default:
		pc.learn(guess, reply>>1, reply&1 == 1)
	}
	b.infos[p.index] = p.info
	return false, nil
}

// runPlain runs one partition's single plain enqueue call with f's
// arguments, bounded by ctx as rcall.Do bounds a call. The common case
// calls on this goroutine with no closure, so the call's command and the
// caller's task stay off the heap. inFlight reports that Do returned on
// ctx while the call may still run, reading f (and writing cmd: read cmd
// only after a nil error).
func (c *Client) runPlain(ctx context.Context, pc *plainCall, f *plainFrame) (_ *redis.Cmd, inFlight bool, _ error) {
	if ctx.Err() == nil && rcall.Inline(ctx, c.rdb) {
		cmd := pc.call.RunArgs(ctx, c.rdb, f.args)
		return cmd, false, rcall.Settle(ctx, cmd.Err())
	}
	var cmd *redis.Cmd
	err := rcall.Do(ctx, c.rdb, func() error {
		cmd = pc.call.RunArgs(ctx, c.rdb, f.args)
		return cmd.Err()
	})
	if err != nil {
		return nil, ctx.Err() != nil, err
	}
	return cmd, false, nil
}

// refusedPatience bounds how long send retries the groups Redis refused,
// waiting refusedWait more before each try, at most refusedMaxWait. A
// partition's scripts are refused for as long as its slot migrates (they
// declare T:guard, which never exists: keys.Partition.Guard), so this is
// how long a move may take before producers see TRYAGAIN.
const (
	refusedPatience = 5 * time.Second
	refusedMaxWait  = 500 * time.Millisecond
	refusedWait     = 50 * time.Millisecond
)

// sendOnce is one round trip of send. When it fails and every failed
// group was refused unrun (rcall.IsRefused), it returns those groups, the
// others' results collected.
func (c *Client) sendOnce(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) ([]*group, error) {
	cmds := make([]*redis.Cmd, len(groups))
	var fresh map[string]int
	var learn func()
	err := rcall.Do(ctx, c.rdb, func() error {
		if len(groups) == 1 && c.routes.Known(groups[0].queue) {
			// the common single call: a plain EVALSHA, no pipeline to build
			k := keys.For(c.cfg.Prefix, groups[0].queue, groups[0].partition)
			script, args := c.enqueueScript(k, groups[0])
			cmds[0] = script.Run(ctx, c.rdb, enqueueKeys(k), args...)
			return cmds[0].Err()
		}
		return rcall.Pipelined(ctx, c.rdb, func(p *rcall.Pipe) error {
			fresh = c.routes.Register(ctx, p, queuesOf(groups))
			learn = c.routes.Learn(ctx, p, queuesOf(groups))
			for i, g := range groups {
				k := keys.For(c.cfg.Prefix, g.queue, g.partition)
				script, args := c.enqueueScript(k, g)
				cmds[i] = p.Run(ctx, script, enqueueKeys(k), args...)
			}
			return nil
		})
	})
	if err != nil {
		rcall.Reroute(c.rdb, err) // a cluster's slot map may be stale
		err = fmt.Errorf("enqueue %q: %w", groups[0].queue, redisError(err))
		if ctx.Err() != nil {
			return nil, err // the call may still be running: cmds are its
		}
		return c.splitRefused(groups, cmds, infos, errs, err)
	}
	c.routes.Remember(fresh)
	if learn != nil {
		learn()
	}
	for i, g := range groups {
		if err := c.collect(g, cmds[i], infos, errs); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// splitRefused sorts the groups of a failed round trip: the results of
// those that ran are collected, those Redis refused unrun are returned for
// another try. When any other failed (its outcome unknown), it returns
// none and err.
func (c *Client) splitRefused(groups []*group, cmds []*redis.Cmd, infos []*TaskInfo, errs []error, err error) ([]*group, error) {
	var refused []*group
	for i, cmd := range cmds {
		switch {
		case cmd == nil:
			return nil, err
		case rcall.IsRefused(cmd.Err()):
			refused = append(refused, groups[i])
		case cmd.Err() != nil:
			return nil, err
		}
	}
	for i, g := range groups {
		if cmds[i].Err() == nil {
			if cerr := c.collect(g, cmds[i], infos, errs); cerr != nil {
				return nil, cerr
			}
		}
	}
	return refused, err
}

// collect reads the reply of g's enqueue script into infos and errs.
func (c *Client) collect(g *group, cmd *redis.Cmd, infos []*TaskInfo, errs []error) error {
	replies, err := cmd.Int64Slice()
	if err == nil {
		replies, err = c.learnDepth(g, replies)
	}
	if err != nil {
		return fmt.Errorf("enqueue %q: %w", g.queue, err)
	}
	for j, p := range g.tasks {
		switch replies[j] {
		case codes.EnqPending:
			infos[p.index] = p.info
		case codes.EnqScheduled:
			p.info.State, p.info.NextProcessAt = StateScheduled, p.due
			infos[p.index] = p.info
		case codes.EnqDuplicateID:
			errs[p.index] = fmt.Errorf("%w: %q in queue %q", ErrDuplicateTaskID, p.info.ID, g.queue)
		case codes.EnqDuplicateUnique:
			errs[p.index] = fmt.Errorf("%w: key %q in queue %q", ErrDuplicateUniqueTask, p.unique, g.queue)
		case codes.EnqQueueFull:
			errs[p.index] = g.queueFull()
		case codes.EnqKeyFull:
			errs[p.index] = g.keyFull(p.info.Group)
		case codes.EnqClosed:
			errs[p.index] = fmt.Errorf("%w: partition %d of queue %q", ErrPartitionClosed, g.partition, g.queue)
		}
	}
	return nil
}

// enqueueKeys returns the KEYS of enqueue.lua for partition k.
func enqueueKeys(k keys.Partition) []string {
	return []string{k.First(), k.Last(), k.Feed(), keys.RankKey(k.Feed()), k.FeedMsg(), k.Scheduled(), k.Msg(), k.State(), k.Guard()}
}

// enqueueArgs returns the ARGV of enqueue.lua for g on partition k.
func (c *Client) enqueueArgs(k keys.Partition, g *group) []any {
	plain := true
	for i := range g.tasks {
		if !g.tasks[i].plain() {
			plain = false
			break
		}
	}
	if plain {
		// the script's short layout: two fields per task
		args := make([]any, 0, 5+2*len(g.tasks))
		args = append(args, k.T, "", c.cfg.ShardSize, c.cfg.FeedSize, 2)
		for _, p := range g.tasks {
			args = append(args, p.msg, p.id)
		}
		return args
	}
	args := make([]any, 0, 5+7*len(g.tasks))
	args = append(args, k.T, "", c.cfg.ShardSize, c.cfg.FeedSize, 7)
	for _, p := range g.tasks {
		args = append(args, p.msg, p.id, p.at, p.in, p.unique, p.uttl, p.idClaim)
	}
	return args
}

// existing sets infos[i] for each task whose errs[i] is ErrDuplicateTaskID
// to the task that holds the ID: what its partition has of it, read in
// one round trip for all of them. That is its state, and its result while
// it is kept. A task the partition no longer holds (finished and not
// kept, or deleted) gets its ID, queue and partition alone. When the read
// fails, infos[i] stays nil; the error still says duplicate.
func (c *Client) existing(ctx context.Context, b *batch) {
	var dups []pending
	for i, err := range b.errs {
		if errors.Is(err, ErrDuplicateTaskID) {
			dups = append(dups, b.tasks[i])
		}
	}
	if len(dups) == 0 {
		return
	}
	cmds := make([]*redis.Cmd, len(dups))
	err := rcall.Pipelined(ctx, c.rdb, func(pipe *rcall.Pipe) error {
		for i, p := range dups {
			k := keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition)
			cmds[i] = pipe.Run(ctx, script.GetTask, getTaskKeys(k), p.id)
		}
		return nil
	})
	if err != nil {
		return
	}
	for i, p := range dups {
		ti, err := getTaskReply(&opener{codec: c.codec, limit: c.cfg.MaxPayloadSize}, p.info.Queue, p.info.Partition, p.info.ID, cmds[i])
		switch {
		case err != nil:
		case ti == nil:
			b.infos[p.index] = &TaskInfo{ID: p.info.ID, Queue: p.info.Queue, Partition: p.info.Partition}
		default:
			b.infos[p.index] = ti
		}
	}
}
