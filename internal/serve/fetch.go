package serve

import (
	"context"
	"time"

	"github.com/shardq/shardq/internal/wait"

	"github.com/shardq/shardq/internal/codes"
)

// fetch feeds one queue partition's tasks to handlers until ctx ends. It
// pops as many tasks as there are free handler slots (one script call);
// when the queue is empty it blocks for a one-second slice, then claims
// what arrived. Errors (Redis down, restarting, read only, out of
// memory...) are logged and retried with backoff: the loop only ends
// with ctx.
//
// The loop waits for one thing at a time (slots, a pop, a blocking
// slice or a pause) and reacts to what comes back: each wait's end is a
// named event, each event a method of fetcher, whose state only this
// goroutine changes. The calls to Redis and the slots line run under
// ctx, so they end by themselves on shutdown; the loop then stops
// before it asks for slots again.
func (s *Engine) fetch(ctx context.Context, p *part) {
	f := s.newFetcher(ctx, p)
	defer f.stop()
	f.next()
	for !f.ended {
		select {
		case g := <-f.granted: // the slots line answered
			f.onGranted(g)
		case r := <-f.popped: // a pop or claim returned
			f.onPopped(r)
		case m := <-f.moved: // a blocking slice returned
			f.onMoved(m)
		case <-f.freed: // a task of this partition finished (at the concurrency limit)
			f.onWoken()
		case <-f.timer: // a pause, a rate limit's wait or a backoff ran out
			f.onWoken()
		case <-f.done: // shutdown ends a wait; calls out end by themselves
			f.onWoken()
		}
	}
}

// fetcher is the state of one partition's fetch loop (fetch). Only the
// loop's goroutine reads or changes it; the goroutines that make its
// calls get their arguments by value and send their results back.
type fetcher struct {
	s   *Engine
	p   *part
	ctx context.Context

	wait     wait.Backoff
	inflight bool // claim before popping: the in-flight list may hold items
	busy     bool // the last pop filled its batch: the queue has a backlog
	carrying bool // this fetcher carries the outbox's outcomes in its pops
	backlog  bool // the last pop filled every slot it had: see slots.Slots
	ended    bool

	// the pop out: the slots it holds, the tasks asked ahead of them,
	// and whether it claims from the in-flight list
	n, extra int
	claiming bool
	hold     int  // slots held while blocked on an empty queue
	rejoin   bool // the wait out ends with slots.rejoin

	// events: each has one sender at a time, and a nil channel is never
	// ready
	granted chan granted
	popped  chan popped
	moved   chan moved
	freed   <-chan struct{} // p.freed while waiting at the concurrency limit
	timer   <-chan time.Time
	done    <-chan struct{} // ctx.Done() while waiting
	t       *time.Timer
}

// granted is the slots line's answer: n slots, after a busy fetcher's
// first try at a batch (first) or after acquire; err ends the fetch.
type granted struct {
	n     int
	first bool
	err   error
}

// popped is what a pop or claim returned.
type popped struct {
	r   popReply
	err error
}

// moved is what a blocking slice returned: got reports that the
// in-flight list may now hold something to claim.
type moved struct {
	got bool
	err error
}

func (s *Engine) newFetcher(ctx context.Context, p *part) *fetcher {
	return &fetcher{s: s, p: p, ctx: ctx,
		inflight: true, // a previous incarnation of this ID cannot exist, but a lost reply can
		granted:  make(chan granted, 1), popped: make(chan popped, 1), moved: make(chan moved, 1)}
}

// stop gives back what the fetcher holds when its loop ends: the tasks
// leased ahead and never started, its backlog and its carrying.
func (f *fetcher) stop() {
	f.s.giveBackAhead(f.p)
	f.setBacklog(false)
	f.setBusy(false)
}

// next begins a round, unless ctx ended: a busy fetcher first waits (at
// most batchWait) for a whole batch of slots, so one round trip carries a
// full pop and the acks that freed them, and this goroutine wakes once
// for it; else it waits in line for at least one slot. Slots the line
// grants at once come without a goroutine to wait for them.
func (f *fetcher) next() {
	if f.ctx.Err() != nil {
		f.ended = true
		return
	}
	if !f.busy {
		f.acquire()
		return
	}
	s, ctx, sh, ch, size := f.s, f.ctx, f.p.share, f.granted, f.s.cfg.FetchSize
	if n, ok := s.slots.TryTopUp(sh, 0, size, size); ok {
		ch <- granted{n: n, first: true}
		return
	}
	go func() { ch <- granted{n: s.slots.TopUp(ctx, sh, 0, size, size, batchWait), first: true} }()
}

// acquire waits in line for at least one slot, topping a busy fetcher's
// up to a batch. Until one comes free, which may take as long as a
// handler runs, the flusher writes what finished: tasks leased ahead took
// the slots their outcomes freed, and those outcomes must not wait for a
// pop.
func (f *fetcher) acquire() {
	f.setCarrying(false)
	s, ctx, sh, busy, ch, size := f.s, f.ctx, f.p.share, f.busy, f.granted, f.s.cfg.FetchSize
	n := s.slots.TryAcquire(sh, size)
	if n > 0 && (!busy || n >= size) {
		ch <- granted{n: n}
		return
	}
	go func() {
		var err error
		if n == 0 {
			n, err = s.slots.Acquire(ctx, sh, size)
		}
		if err == nil && busy && n < size {
			n = s.slots.TopUp(ctx, sh, n, size, size, batchWait)
		}
		ch <- granted{n: n, err: err}
	}()
}

// onGranted pops with the slots that came: first for heavier queues
// under strict priority, then for the tasks leased ahead, then in one
// round trip for the rest, carrying the outcomes that wait.
func (f *fetcher) onGranted(g granted) {
	s, p := f.s, f.p
	switch {
	case g.first && g.n == 0:
		f.acquire() // no slot came free within batchWait
		return
	case g.err != nil:
		f.ended = true
		return
	}
	n := s.popHigher(f.ctx, p, g.n)
	if n == 0 {
		// heavier queues took every slot: this fetcher did not pop, so
		// it carries nothing; the flusher writes the outcomes
		f.setBusy(false)
		f.setBacklog(false)
		f.next()
		return
	}
	// tasks leased ahead take the slots first: no round trip
	if n -= s.startAhead(p, n); n == 0 {
		f.next()
		return
	}
	f.n, f.claiming, f.extra = n, f.inflight, 0
	if !f.claiming {
		f.extra = s.prefetch(p, n, f.backlog)
	}
	drain(p.freed) // this round trip carries what finished so far
	ctx, extra, claiming, ch := f.ctx, f.extra, f.claiming, f.popped
	go func() {
		r, err := s.dequeue(ctx, p, n, extra, claiming)
		ch <- popped{r, err}
	}()
}

// onPopped starts what a pop or claim leased and keeps what came ahead
// of the slots; a failed call releases the slots and backs off.
func (f *fetcher) onPopped(res popped) {
	s, p, n := f.s, f.p, f.n
	if res.err != nil {
		f.setBacklog(false)
		s.slots.Release(n)
		f.setBusy(false) // the flusher writes the outcomes meanwhile
		p.lost.lost()
		s.logRedisError("fetch", res.err)
		f.sleep(f.wait.Next(), nil, false)
		return
	}
	r := res.r
	f.wait.Reset()
	s.redisOK()
	if p.lost.answered(r) {
		s.recoverLost(f.ctx, p)
	}
	if f.claiming {
		f.inflight = r.aux > 0
	}
	if len(r.tasks) > 0 {
		s.probe.AfterClaim()
	}
	full := len(r.tasks) == n+f.extra
	if len(r.tasks) > n {
		p.ahead.put(r.tasks[n:])
		s.probe.LeasedAhead(len(r.tasks) - n)
		r.tasks = r.tasks[:n]
	}
	s.start(p, r.tasks)
	f.setBacklog(full)
	f.setBusy(full && n > 1)
	f.afterPop(r, n-len(r.tasks))
}

// afterPop goes on after a pop or claim that started its tasks and left n
// slots unused, as its status says.
func (f *fetcher) afterPop(r popReply, n int) {
	s := f.s
	switch {
	case len(r.tasks) > 0 || f.claiming && r.status == codes.PopOK || r.status == codes.PopParked:
		// more may be waiting: pop (or claim) again at once
		s.slots.Release(n)
		f.next()
	case r.status == codes.PopRate && !f.claiming:
		// at the rate limit: wait until the next start is allowed
		s.slots.Release(n)
		f.sleep(min(time.Duration(r.aux)*time.Millisecond, time.Second), nil, true)
	case r.status == codes.PopFull:
		// at the queue's concurrency limit: look again when a task of
		// this partition finishes here (the next pop carries its ack,
		// which frees its hold first) or, for holds of other workers,
		// shortly
		s.slots.Release(n)
		f.sleep(s.idlePoll(), f.p.freed, true)
	case r.status != codes.PopOK:
		// paused: look again shortly
		s.slots.Release(n)
		f.sleep(s.idlePoll(), nil, true)
	default:
		f.block(n, r.aux)
	}
}

// block waits a slice on the empty queue's end shard. With a slot to
// spare it holds one, so what arrives starts at once. When other
// fetchers wait for slots it holds none: an idle queue must not keep
// busy ones (or, with strict priority, lower ones) from running; what
// arrives meanwhile waits in this worker's in-flight list for its next
// slot.
func (f *fetcher) block(n int, shard int64) {
	s, p, ctx, ch := f.s, f.p, f.ctx, f.moved
	f.hold = min(1, n)
	if s.slots.Contended() {
		f.hold = 0
	}
	s.slots.Park(n, f.hold)
	go func() {
		got, err := s.block(ctx, p, shard)
		ch <- moved{got, err}
	}()
}

// onMoved gives back the slot held over a blocking slice, and claims
// what the slice moved in flight, if anything, next round.
func (f *fetcher) onMoved(m moved) {
	s := f.s
	s.slots.Unpark(f.hold)
	s.slots.Rejoin(f.p.share)
	f.inflight = m.got
	if m.got && m.err == nil {
		s.probe.AfterMove()
	}
	if m.err != nil && f.ctx.Err() == nil {
		s.logRedisError("fetch", m.err)
		f.sleep(f.wait.Next(), nil, false)
		return
	}
	f.next()
}

// sleep waits d, or less when freed is signalled or ctx ends; rejoin
// brings the queue back level with the others afterwards (slots.rejoin).
func (f *fetcher) sleep(d time.Duration, freed <-chan struct{}, rejoin bool) {
	f.t = time.NewTimer(d)
	f.timer, f.freed, f.done, f.rejoin = f.t.C, freed, f.ctx.Done(), rejoin
}

// onWoken ends a wait and begins the next round.
func (f *fetcher) onWoken() {
	f.t.Stop()
	f.timer, f.freed, f.done = nil, nil, nil
	if f.rejoin {
		f.s.slots.Rejoin(f.p.share)
	}
	f.next()
}

// setCarrying records whether this fetcher carries the outbox's
// outcomes in its pops; with WaitReplicas the flusher writes them all,
// waiting for replicas.
func (f *fetcher) setCarrying(b bool) {
	if b != f.carrying && f.s.cfg.WaitReplicas == 0 {
		f.s.outbox.Carrying(b)
	}
	f.carrying = b
}

// setBusy records whether the queue has a backlog; a busy fetcher
// carries the outcomes.
func (f *fetcher) setBusy(b bool) {
	f.busy = b
	f.setCarrying(b)
}

// setBacklog records whether the last pop filled every slot it had, for
// the slots line (slots.Slots.Backlogged).
func (f *fetcher) setBacklog(b bool) {
	f.s.slots.Backlogged(f.p.share, f.backlog, b)
	f.backlog = b
}

// popHigher, under strict priority, first offers the n slots p's fetcher
// holds to the partitions of heavier queues, in order, and returns how
// many are left for p. Without it a slot freed while a heavier queue's
// fetcher was between two pops could go to a lighter queue.
func (s *Engine) popHigher(ctx context.Context, p *part, n int) int {
	if !s.cfg.StrictPriority {
		return n
	}
	for _, h := range s.partList() {
		if n == 0 || h.share.Weight() <= p.share.Weight() {
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
func (s *Engine) idlePoll() time.Duration { return min(250*time.Millisecond, s.cfg.Heartbeat) }

// batchWait bounds how long a busy fetcher or flusher waits to gather a
// batch, so a script call carries many tasks instead of one or two. It
// applies only while a queue has a backlog; an idle worker never waits.
const batchWait = time.Millisecond

// drain clears a pending signal on ch.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}
