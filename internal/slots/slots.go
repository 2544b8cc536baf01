// Package slots shares a worker process's handler slots among the
// fetchers of its queues, by strict priority or by weight.
package slots

import (
	"context"
	"sync"
	"time"
)

// Slots hands this process's free handler slots to the fetchers that wait
// for them: to the heaviest waiting queue first (strict priority), or in
// proportion to the queues' weights.
//
// Weighted shares are kept by stride scheduling: every slot a queue takes
// advances its share's pass by 1/weight, and free slots go to the waiting
// queue whose pass is lowest. A queue that waits rarely (its fetcher is
// out popping while the others queue up) is not shortchanged, as it is by
// a weighted draw among whoever happens to wait; and a queue coming back
// from idle (rejoin) starts level with the others rather than with a
// credit for the time it had nothing to run.
//
// Every fetcher that wants slots waits in one line: those that need one
// slot to go on (Acquire) and busy ones gathering a whole batch (TopUp).
// The first in line by pass is served first; while it gathers its batch
// the others wait behind it, at most the wait TopUp is given (the
// worker's batchWait).
//
// A backlogged queue whose fetcher is out popping is not in line, yet it
// is owed the next slot if its pass is lowest. Giving that slot to a
// lighter queue that happens to wait is what bent the shares with short
// handlers (see BENCHMARKS.md), since slots free up many times per round
// trip. So a slot is held for such a queue until its fetcher is back, one
// round trip at most, or finds its backlog gone (see backlogged).
type Slots struct {
	mu      sync.Mutex
	size    int // the handler slots in all
	free    int
	idle    int // slots that fetchers blocked on empty queues hold
	strict  bool
	waiters []*waiter
	shares  []*Share
	pass    float64 // the highest pass served so far: the virtual time
}

// Share is one queue's standing in the weighted draw: every partition
// fetcher of the queue uses the same one, so weights are per queue.
type Share struct {
	weight int
	// guarded by slots.mu
	pass    float64
	backlog int // its fetchers whose last pop filled every slot they had
	waiting int // its fetchers in line
}

// waiter is a fetcher waiting in line for slots.
type waiter struct {
	share *Share
	need  int  // slots it waits for at the least
	want  int  // slots it takes at the most
	batch bool // a busy fetcher topping up its batch
	ch    chan int
}

// New returns n handler slots, all free, shared by strict priority or,
// when strict is false, in proportion to the queues' weights.
func New(n int, strict bool) *Slots {
	return &Slots{size: n, free: n, strict: strict}
}

// Park hands back n slots less the hold that a fetcher blocking on an
// empty queue keeps, so what arrives there starts at once. A held slot
// comes back only with unpark, a blocking slice later, so no batch waits
// for it (topUp).
func (s *Slots) Park(n, hold int) {
	s.mu.Lock()
	s.idle += hold
	s.free += n - hold
	s.grant()
	s.mu.Unlock()
}

// Unpark gives back the hold a fetcher kept while it blocked.
func (s *Slots) Unpark(hold int) {
	s.mu.Lock()
	s.idle -= hold
	s.free += hold
	s.grant()
	s.mu.Unlock()
}

// Weight returns the weight sh was registered with.
func (sh *Share) Weight() int { return sh.weight }

// NewShare registers a queue of the given weight.
func (s *Slots) NewShare(weight int) *Share {
	sh := &Share{weight: weight}
	s.mu.Lock()
	s.shares = append(s.shares, sh)
	s.mu.Unlock()
	return sh
}

// DropShare takes a queue that is no longer run out of the draw.
func (s *Slots) DropShare(sh *Share) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.shares {
		if x == sh {
			s.shares = append(s.shares[:i], s.shares[i+1:]...)
			break
		}
	}
	s.grant() // a slot held for it goes to the others
}

// Backlogged records whether a fetcher of sh found a backlog: its last
// pop filled every slot it had (was is what it recorded before). Slots
// held for sh go to the others once no fetcher of sh has one.
func (s *Slots) Backlogged(sh *Share, was, is bool) {
	if was == is {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if is {
		sh.backlog++
		return
	}
	sh.backlog--
	s.grant()
}

// owed reports whether a backlogged queue that is not in line has a lower
// pass than sh: the next slot is its, and waits for its fetcher; s.mu is
// held.
func (s *Slots) owed(sh *Share) bool {
	if s.strict {
		return false // the worker's popHigher serves heavier queues first
	}
	for _, x := range s.shares {
		if x != sh && x.backlog > 0 && x.waiting == 0 &&
			(x.pass < sh.pass || x.pass == sh.pass && x.weight > sh.weight) {
			return true
		}
	}
	return false
}

// take charges n slots to sh and returns n; s.mu is held.
func (s *Slots) take(sh *Share, n int) int {
	s.pass = max(s.pass, sh.pass)
	sh.pass += float64(n) / float64(sh.weight)
	return n
}

// Rejoin brings a queue back from idle (its queue was empty, paused or
// limited) level with the others: the time it had nothing to run earns it
// no burst of slots.
func (s *Slots) Rejoin(sh *Share) {
	s.mu.Lock()
	sh.pass = max(sh.pass, s.pass)
	s.mu.Unlock()
}

// Acquire waits for at least one slot and takes up to want, for sh.
func (s *Slots) Acquire(ctx context.Context, sh *Share, want int) (int, error) {
	s.mu.Lock()
	if n := s.acquireNow(sh, want); n > 0 {
		s.mu.Unlock()
		return n, nil
	}
	w := s.join(sh, 1, want, false)
	s.mu.Unlock()
	select {
	case n := <-w.ch:
		return n, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.leave(w) {
			// granted while we gave up: hand the slots on (the share keeps
			// the charge, as if they had run)
			s.free += <-w.ch
			s.grant()
		}
		return 0, ctx.Err()
	}
}

// TopUp adds slots to the n a fetcher of sh holds until it has at least
// min, or until wait passes, waking once enough slots came. A busy queue's
// fetcher uses it so a pop carries a batch rather than the one or two
// slots that happened to be free: handlers release slots one by one.
func (s *Slots) TopUp(ctx context.Context, sh *Share, n, min, want int, wait time.Duration) int {
	if n >= want {
		return n
	}
	s.mu.Lock()
	n, min, done := s.topUpNow(sh, n, min, want)
	if done {
		s.mu.Unlock()
		return n
	}
	w := s.join(sh, min-n, want-n, true)
	s.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case k := <-w.ch:
		return n + k
	case <-timer.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leave(w) {
		return n + <-w.ch // granted as the wait ended
	}
	// the wait is over: take what is free (unless it is owed to a queue
	// whose pass is lower), and let the line move on
	if !s.owed(sh) {
		n += s.take(sh, s.takeFree(want-n))
	}
	s.grant()
	return n
}

// TryAcquire takes up to want slots for sh when acquire would take them
// without waiting, and returns how many: 0 when acquire would wait.
func (s *Slots) TryAcquire(sh *Share, want int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acquireNow(sh, want)
}

// acquireNow is Acquire's part that does not wait; s.mu is held.
func (s *Slots) acquireNow(sh *Share, want int) int {
	if s.free == 0 || len(s.waiters) > 0 || s.owed(sh) {
		return 0
	}
	n := s.take(sh, min(s.free, want))
	s.free -= n
	return n
}

// TryTopUp is topUp when it would not wait: it reports whether it
// returned (done), with the slots held then.
func (s *Slots) TryTopUp(sh *Share, n, min, want int) (int, bool) {
	if n >= want {
		return n, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _, done := s.topUpNow(sh, n, min, want)
	return n, done
}

// topUpNow is TopUp's part that does not wait: it returns the slots held,
// the batch to wait for, and whether topUp is done without waiting; s.mu
// is held.
func (s *Slots) topUpNow(sh *Share, n, min, want int) (int, int, bool) {
	// slots held by fetchers blocked on idle queues stay held for a
	// blocking slice: a batch that counted on them would wait out its
	// whole wait at every pop
	if reach := max(1, s.size-s.idle); min > reach {
		min = reach
	}
	if len(s.waiters) == 0 && s.free >= min-n && !s.owed(sh) {
		return n + s.take(sh, s.takeFree(want-n)), min, true
	}
	// with enough for a batch already, the others in line come first
	return n, min, n >= min
}

// takeFree removes up to k free slots and returns how many; s.mu is held.
func (s *Slots) takeFree(k int) int {
	k = min(k, s.free)
	s.free -= k
	return k
}

// join puts a fetcher of sh in line and serves the line, since slots may
// be free while the first in line gathers a batch; s.mu is held.
func (s *Slots) join(sh *Share, need, want int, batch bool) *waiter {
	w := &waiter{share: sh, need: need, want: want, batch: batch, ch: make(chan int, 1)}
	s.waiters = append(s.waiters, w)
	sh.waiting++
	s.grant()
	return w
}

// leave takes w out of line and reports whether it was still there (not
// served); s.mu is held.
func (s *Slots) leave(w *waiter) bool {
	for i, x := range s.waiters {
		if x == w {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			w.share.waiting--
			return true
		}
	}
	return false
}

// Contended reports whether fetchers wait for a slot to go on at all (not
// only busy ones topping up a batch).
func (s *Slots) Contended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		if !w.batch {
			return true
		}
	}
	return false
}

// Release gives n slots back.
func (s *Slots) Release(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	s.grant()
	s.mu.Unlock()
}

// grant serves the line from the front while the free slots meet the
// first waiter's need; s.mu is held.
func (s *Slots) grant() {
	for s.free > 0 && len(s.waiters) > 0 {
		i := s.pick()
		w := s.waiters[i]
		if s.free < w.need {
			return // it gathers a batch; the line waits (at most its TopUp wait)
		}
		if s.owed(w.share) {
			return // held for a backlogged queue whose fetcher is out popping
		}
		s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
		w.share.waiting--
		w.ch <- s.take(w.share, s.takeFree(w.want))
	}
}

// pick chooses the waiter to serve next: the heaviest queue under strict
// priority, else the lowest pass, the heavier queue on a tie, then the
// first to wait.
func (s *Slots) pick() int {
	best := 0
	for i, w := range s.waiters {
		b := s.waiters[best].share
		if s.strict {
			if w.share.weight > b.weight {
				best = i
			}
			continue
		}
		if w.share.pass < b.pass || w.share.pass == b.pass && w.share.weight > b.weight {
			best = i
		}
	}
	return best
}
