package worker

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// slots hands this process's free handler slots to the fetchers that wait
// for them: to the heaviest waiting queue first (strict priority) or at
// random in proportion to the queues' weights.
type slots struct {
	mu       sync.Mutex
	free     int
	strict   bool
	waiters  []*waiter
	watchers []*watcher // topUp calls waiting for enough free slots
}

// watcher is a topUp call waiting until at least need slots are free.
type watcher struct {
	need int
	ch   chan struct{} // closed when need slots are free
}

type waiter struct {
	weight int
	want   int
	ch     chan int // receives the slots granted
}

func newSlots(n int, strict bool) *slots {
	return &slots{free: n, strict: strict}
}

// acquire waits for at least one slot and takes up to want.
func (s *slots) acquire(ctx context.Context, weight, want int) (int, error) {
	s.mu.Lock()
	if s.free > 0 && len(s.waiters) == 0 {
		n := min(s.free, want)
		s.free -= n
		s.mu.Unlock()
		return n, nil
	}
	w := &waiter{weight: weight, want: want, ch: make(chan int, 1)}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case n := <-w.ch:
		return n, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return 0, ctx.Err()
			}
		}
		// granted while we gave up: hand the slots on
		s.free += <-w.ch
		s.grant()
		return 0, ctx.Err()
	}
}

// contended reports whether fetchers are waiting for slots.
func (s *slots) contended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters) > 0
}

// release gives n slots back.
func (s *slots) release(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	s.grant()
	s.notify()
	s.mu.Unlock()
}

// notify wakes the watchers whose need the free slots now meet; s.mu is
// held. A watcher wakes once for its batch, not at every release.
func (s *slots) notify() {
	kept := s.watchers[:0]
	for _, w := range s.watchers {
		if s.free >= w.need {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(s.watchers[len(kept):])
	s.watchers = kept
}

// topUp adds free slots to the n a fetcher holds until it has at least
// min, or until wait passes, waking when enough slots are free. A busy
// queue's fetcher uses it so a pop carries a batch rather than the one or
// two slots that happened to be free: handlers release slots one by one.
func (s *slots) topUp(ctx context.Context, n, min, want int, wait time.Duration) int {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		n = s.takeFree(n, want)
		if n >= min {
			s.mu.Unlock()
			return n
		}
		w := &watcher{need: min - n, ch: make(chan struct{})}
		s.watchers = append(s.watchers, w)
		s.mu.Unlock()
		select {
		case <-w.ch:
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.forget(w)
		n = s.takeFree(n, want) // the slots may have come as the wait ended
		s.mu.Unlock()
		return n
	}
}

// takeFree adds free slots to the n a fetcher holds, up to want, unless
// other fetchers wait for slots (they come first); s.mu is held.
func (s *slots) takeFree(n, want int) int {
	if len(s.waiters) > 0 {
		return n
	}
	k := min(s.free, want-n)
	s.free -= k
	return n + k
}

// forget removes w from the watchers, if still there; s.mu is held.
func (s *slots) forget(w *watcher) {
	for i, x := range s.watchers {
		if x == w {
			s.watchers = append(s.watchers[:i], s.watchers[i+1:]...)
			return
		}
	}
}

// grant hands free slots to waiters; s.mu is held.
func (s *slots) grant() {
	for s.free > 0 && len(s.waiters) > 0 {
		i := s.pick()
		w := s.waiters[i]
		s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
		n := min(s.free, w.want)
		s.free -= n
		w.ch <- n
	}
}

// pick chooses the waiter to serve next.
func (s *slots) pick() int {
	best, total := 0, 0
	for i, w := range s.waiters {
		total += w.weight
		if w.weight > s.waiters[best].weight {
			best = i
		}
	}
	if s.strict {
		return best
	}
	r := rand.IntN(total)
	for i, w := range s.waiters {
		if r < w.weight {
			return i
		}
		r -= w.weight
	}
	return len(s.waiters) - 1
}
