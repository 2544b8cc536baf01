package worker

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/codes"
)

// fetch feeds one queue partition's tasks to handlers until ctx ends. It
// pops as many tasks as there are free handler slots (one script call);
// when the queue is empty it blocks for a one-second slice, then claims
// what arrived. Errors (Redis down, restarting, read
// only, out of memory...) are logged and retried with backoff: the loop
// only ends with ctx.
func (s *Server) fetch(ctx context.Context, p *part) {
	var wait backoff
	inflight := true // a previous incarnation of this ID cannot exist, but a lost reply can
	busy := false    // the last pop filled its batch: the queue has a backlog
	carrying := false
	setCarrying := func(b bool) {
		if b != carrying && s.cfg.WaitReplicas == 0 { // else the flusher waits for replicas
			s.outbox.carrying(b)
		}
		carrying = b
	}
	setBusy := func(b bool) {
		busy = b
		setCarrying(b) // a busy fetcher carries the outcomes
	}
	defer setBusy(false)
	backlog := false // the last pop filled every slot it had: see slots.owed
	setBacklog := func(b bool) {
		s.slots.backlogged(p.share, backlog, b)
		backlog = b
	}
	defer setBacklog(false)
	defer s.giveBackAhead(p) // what was leased ahead and never started
	for ctx.Err() == nil {
		n := 0
		if busy {
			// a backlog: wait (at most batchWait) for a whole batch of
			// slots, so one round trip carries a full pop and the acks
			// that freed them, and this goroutine wakes once for it
			n = s.slots.topUp(ctx, p.share, 0, s.cfg.FetchSize, s.cfg.FetchSize, batchWait)
		}
		if n == 0 {
			// no slot came free within batchWait: until one does, which
			// may take as long as a handler runs, the flusher writes what
			// finished (tasks leased ahead took the slots their outcomes
			// freed, and those outcomes must not wait for a pop)
			setCarrying(false)
			var err error
			if n, err = s.slots.acquire(ctx, p.share, s.cfg.FetchSize); err != nil {
				return
			}
			if busy && n < s.cfg.FetchSize {
				n = s.slots.topUp(ctx, p.share, n, s.cfg.FetchSize, s.cfg.FetchSize, batchWait)
			}
		}
		if n = s.popHigher(ctx, p, n); n == 0 {
			// heavier queues took every slot: this fetcher did not pop, so
			// it carries nothing; the flusher writes the outcomes
			setBusy(false)
			setBacklog(false)
			continue
		}
		// tasks leased ahead take the slots first: no round trip
		if n -= s.startAhead(p, n); n == 0 {
			continue
		}
		claiming := inflight
		extra := 0
		if !claiming {
			extra = s.prefetch(p, n, backlog)
		}
		drain(p.freed) // this round trip carries what finished so far
		r, err := s.dequeue(ctx, p, n, extra, claiming)
		if err != nil {
			setBacklog(false)
			s.slots.release(n)
			setBusy(false) // the flusher writes the outcomes meanwhile
			p.lost.lost()
			s.logRedisError("fetch", err)
			wait.sleep(ctx)
			continue
		}
		wait.reset()
		s.redisOK()
		if p.lost.answered(r) {
			s.recoverLost(ctx, p)
		}
		if claiming {
			inflight = r.aux > 0
		}
		if len(r.tasks) > 0 {
			s.probe.afterClaim()
		}
		full := len(r.tasks) == n+extra
		if len(r.tasks) > n {
			p.ahead.put(r.tasks[n:])
			s.probe.leasedAhead(len(r.tasks) - n)
			r.tasks = r.tasks[:n]
		}
		s.start(p, r.tasks)
		setBacklog(full)
		setBusy(full && n > 1)
		n -= len(r.tasks)
		switch {
		case len(r.tasks) > 0 || claiming && r.status == codes.PopOK || r.status == codes.PopParked:
			// more may be waiting: pop (or claim) again at once
			s.slots.release(n)
			continue
		case r.status == codes.PopRate && !claiming:
			// at the rate limit: wait until the next start is allowed
			s.slots.release(n)
			sleepCtx(ctx, min(time.Duration(r.aux)*time.Millisecond, time.Second))
			s.slots.rejoin(p.share)
			continue
		case r.status == codes.PopFull:
			// at the queue's concurrency limit: look again when a task of
			// this partition finishes here (the next pop carries its ack,
			// which frees its hold first) or, for holds of other workers,
			// shortly
			s.slots.release(n)
			waitCtx(ctx, p.freed, s.idlePoll())
			s.slots.rejoin(p.share)
			continue
		case r.status != codes.PopOK:
			// paused: look again shortly
			s.slots.release(n)
			sleepCtx(ctx, s.idlePoll())
			s.slots.rejoin(p.share)
			continue
		}
		// Empty: block for a slice. With a slot to spare, hold one, so what
		// arrives starts at once. When other fetchers wait for slots, hold
		// none: an idle queue must not keep busy ones (or, with strict
		// priority, lower ones) from running; what arrives meanwhile waits
		// in this worker's in-flight list for its next slot.
		hold := min(1, n)
		if s.slots.contended() {
			hold = 0
		}
		s.slots.park(n, hold)
		got, err := s.block(ctx, p, r.aux)
		s.slots.unpark(hold)
		s.slots.rejoin(p.share)
		inflight = got
		if got && err == nil {
			s.probe.afterMove()
		}
		if err != nil && ctx.Err() == nil {
			s.logRedisError("fetch", err)
			wait.sleep(ctx)
		}
	}
}

// popHigher, under strict priority, first offers the n slots p's fetcher
// holds to the partitions of heavier queues, in order, and returns how
// many are left for p. Without it a slot freed while a heavier queue's
// fetcher was between two pops could go to a lighter queue.
func (s *Server) popHigher(ctx context.Context, p *part, n int) int {
	if !s.cfg.StrictPriority {
		return n
	}
	for _, h := range s.partList() {
		if n == 0 || h.share.weight <= p.share.weight {
			break
		}
		h.lost.begin()
		r, err := s.pop(ctx, h, n)
		if err != nil {
			h.lost.lost() // h's own fetcher looks for its leases
			h.lost.end()
			return n // p's own pop will meet the same trouble and back off
		}
		h.lost.answered(r)
		h.lost.end()
		s.start(h, r.tasks)
		n -= len(r.tasks)
	}
	return n
}

// idlePoll is how often a paused or limited queue is looked at again.
func (s *Server) idlePoll() time.Duration { return min(250*time.Millisecond, s.cfg.Heartbeat) }

// batchWait bounds how long a busy fetcher or flusher waits to gather a
// batch, so a script call carries many tasks instead of one or two. It
// applies only while a queue has a backlog; an idle worker never waits.
const batchWait = time.Millisecond

// backoff doubles a wait from 20ms to 1s across consecutive failures.
type backoff struct{ d time.Duration }

func (b *backoff) sleep(ctx context.Context) {
	b.d = min(max(b.d*2, 20*time.Millisecond), time.Second)
	sleepCtx(ctx, b.d)
}

func (b *backoff) reset() { b.d = 0 }

// waitCtx waits for a signal on ch, at most d.
func waitCtx(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-ch:
	case <-t.C:
	}
}

// drain clears a pending signal on ch.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
