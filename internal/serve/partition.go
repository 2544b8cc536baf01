package serve

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardq/shardq/internal/slots"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/sharded"
	"github.com/shardq/shardq/internal/wire"
)

// part is one queue partition this server runs, with the script calls a
// fetcher makes on it.
type part struct {
	queue string
	index int
	ord   int          // its place in Engine.parts
	share *slots.Share // the queue's weight and standing, shared by its partitions
	k     keys.Partition
	// the KEYS of the scripts a busy worker calls per batch, built once
	popKeys, claimKeys, ackKeys, failKeys []string
	lost                                  lostLeases // lease calls whose reply never came back
	// freed is signalled when a task of this partition finishes here or
	// its outcome is written: a fetcher at the queue's concurrency limit
	// waits for it (or idlePoll, for slots freed by other workers).
	freed chan struct{}
	work  *work // the queue's handler counts, shared by its partitions
	ahead ahead // tasks leased ahead of free slots (prefetch)
	// stop cancels this partition's fetcher alone, and done is closed when
	// it returned (runFetcher): a resize stops partitions one by one
	stop context.CancelFunc
	done chan struct{}
}

// signalFreed wakes p's fetcher if it waits at the concurrency limit.
func (p *part) signalFreed() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

func newPart(k keys.Partition, queue string, index, ord int, sh *slots.Share, worker string) *part {
	return &part{queue: queue, index: index, ord: ord, share: sh, k: k, freed: make(chan struct{}, 1),
		popKeys: []string{k.First(), k.Last(), k.Active(), k.Msg(), k.State(), k.Paused(), k.Limits(), k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire(),
			k.FairRing(), k.FairDue()},
		claimKeys: []string{k.Inflight(worker), k.Active(), k.Msg(), k.State(), k.Paused(), k.First(), k.Last(), k.Limits(),
			k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire()},
		ackKeys:  []string{k.Active(), k.Msg(), k.State(), k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire()},
		failKeys: []string{k.Active(), k.Msg(), k.State(), k.FeedMsg(), k.Retry(), k.Dead(), keys.RankKey(k.Dead()), k.Scheduled()},
	}
}

// leased is one task a pop or claim leased to this worker.
type leased struct {
	id      string
	msg     string
	attempt int
	granted int // attempts granted beyond MaxRetry+1 by operators (RunTask)
	token   int64
	at      int64 // server ms when leased
}

type popReply struct {
	status int64
	aux    int64 // pop: the end shard; claim: items left in flight
	codes  []any // one per ack the call carried: 1 acked, 0 stale
	tasks  []leased
	now    int64 // server ms when the call ran
}

// dequeue pops n tasks of p, and up to extra more to lease ahead of free
// slots (claims n from this worker's in-flight list when claiming),
// carrying the outcomes waiting in the outbox in the
// same round trip: p's acks ride in the pop script itself, which runs them
// first, so the slots and limits they free count at once; other outcomes
// (failures, other partitions) go as script calls ahead of it in one
// pipeline. A busy worker pays one round trip, and one script call, per
// batch. Outcomes whose write failed go back to the outbox.
func (s *Engine) dequeue(ctx context.Context, p *part, n, extra int, claiming bool) (popReply, error) {
	var carry []outcome
	if s.cfg.WaitReplicas == 0 { // else the flusher writes them, waiting for replicas
		s.probe.BeforeTake(true)
		carry = s.outbox.Take(maxOutcomeBatch)
	}
	groups := groupOutcomes(carry)
	var acks []outcome
	for i, g := range groups {
		if g.p == p && g.kind == outcomeAck {
			acks = g.items
			groups = slices.Delete(groups, i, i+1)
			break
		}
	}
	script, keys, args := s.dequeueCall(p, n, extra, claiming, acks)
	var cmd *redis.Cmd
	if len(groups) == 0 {
		cmd = script.Run(ctx, s.rdb, keys, args...)
	} else {
		_ = rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
			s.queueOutcomeGroups(ctx, pipe, groups)
			cmd = pipe.Run(ctx, script, keys, args...)
			return nil
		})
		if failed, err := s.settle(groups); err != nil {
			s.logRedisError("write outcomes", err)
			s.outbox.GiveBack(failed)
		}
	}
	r, err := parseDequeue(p, cmd, claiming)
	if err != nil {
		if len(acks) > 0 && rcall.IsScriptError(err) {
			// the script stopped at an error, maybe one ack's: carried
			// again, the acks would stop every pop of p. Written by
			// calls of their own, the good ones land once.
			failed, ferr := s.isolate(outcomeGroup{p: p, kind: outcomeAck, items: acks}, err, false)
			if ferr != nil {
				s.logRedisError("write outcomes", ferr)
			}
			s.outbox.GiveBack(failed)
			return r, err
		}
		// the acks are rewritten under their tokens: harmless if they ran
		s.outbox.GiveBack(markResent(acks))
		return r, err
	}
	s.warnStale(acks, r.codes)
	s.flowsWritten(acks)
	return r, nil
}

// pop leases up to n pending tasks of p, in one round trip of its own.
func (s *Engine) pop(ctx context.Context, p *part, n int) (popReply, error) {
	script, keys, args := s.dequeueCall(p, n, 0, false, nil)
	return parseDequeue(p, script.Run(ctx, s.rdb, keys, args...), false)
}

// dequeueCall returns the script call of a pop, or of a claim, that first
// acks acks (outcomes of p).
func (s *Engine) dequeueCall(p *part, n, extra int, claiming bool, acks []outcome) (*rcall.Script, []string, []any) {
	k := p.k
	args := make([]any, 0, 9+4*len(acks))
	args = append(args, k.T, n+extra, s.cfg.Lease.Milliseconds(), s.cfg.now(), s.cfg.WorkerID, s.cfg.ShardSize, s.cfg.SucceededSize, n)
	args = appendAcks(args, acks)
	if claiming {
		return script.Claim, p.claimKeys, args
	}
	return script.Pop, p.popKeys, args
}

func parseDequeue(p *part, cmd *redis.Cmd, claiming bool) (popReply, error) {
	res, err := cmd.Slice()
	if err != nil {
		verb := "pop"
		if claiming {
			verb = "claim"
		}
		return popReply{}, fmt.Errorf("%s %s: %w", verb, p.k.T, err)
	}
	return parsePopReply(res)
}

// block waits one slice (at most a second) for an item at the end shard,
// moving it into this worker's in-flight list. It reports whether the
// in-flight list may now hold something to claim.
func (s *Engine) block(ctx context.Context, p *part, shard int64) (bool, error) {
	_, err := sharded.BlockSlice(ctx, s.rdb, script.ShardedBlock, p.k.Base(), true, shard, p.k.Inflight(s.cfg.WorkerID))
	switch {
	case err == nil:
		return true, nil
	case err == redis.Nil:
		return false, nil
	default:
		// the reply may be lost after the move: look in the in-flight list
		return true, fmt.Errorf("block on %s: %w", p.k.T, err)
	}
}

// parsePopReply reads {status, aux, now, {ack codes}, {messages},
// {index, attempt, token, id, ...}}: each leased message is attempt 1
// under token 1, with the ID it opens with, unless the last list says
// otherwise.
func parsePopReply(res []any) (popReply, error) {
	if len(res) != 4 && len(res) != 6 {
		return popReply{}, fmt.Errorf("unexpected pop reply of %d values", len(res))
	}
	r := popReply{}
	r.status, _ = res[0].(int64)
	r.aux, _ = res[1].(int64)
	at, _ := res[2].(int64)
	r.now = at
	r.codes, _ = res[3].([]any)
	if len(res) == 4 {
		return r, nil
	}
	msgs, _ := res[4].([]any)
	extra, _ := res[5].([]any)
	if len(extra)%5 != 0 {
		return popReply{}, fmt.Errorf("unexpected pop reply: %d values of other attempts", len(extra))
	}
	r.tasks = make([]leased, len(msgs))
	for i, m := range msgs {
		l := &r.tasks[i]
		l.msg, _ = m.(string)
		l.at, l.attempt, l.token = at, 1, 1
	}
	for i := 0; i < len(extra); i += 5 {
		k, _ := extra[i].(int64)
		if k < 1 || int(k) > len(r.tasks) {
			return popReply{}, fmt.Errorf("unexpected pop reply: task %d of %d", k, len(r.tasks))
		}
		l := &r.tasks[k-1]
		a, _ := extra[i+1].(int64)
		l.attempt = int(a)
		l.token, _ = extra[i+2].(int64)
		l.id, _ = extra[i+3].(string)
		g, _ := extra[i+4].(int64)
		l.granted = int(g)
	}
	for i := range r.tasks {
		if l := &r.tasks[i]; l.id == "" {
			// the ID the message opens with: the script sends no copy
			l.id, _ = wire.HeadID(l.msg)
		}
	}
	return r, nil
}
