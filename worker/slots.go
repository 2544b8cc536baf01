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
	released chan struct{} // closed and replaced at a release while watchers > 0
	watchers int           // topUp calls waiting on released
}

type waiter struct {
	weight int
	want   int
	ch     chan int // receives the slots granted
}

func newSlots(n int, strict bool) *slots {
	return &slots{free: n, strict: strict, released: make(chan struct{})}
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
	if s.watchers > 0 {
		close(s.released)
		s.released = make(chan struct{})
	}
	s.mu.Unlock()
}

// topUp adds free slots to the n a fetcher holds until it has at least
// min, or until wait passes, waking at each release. A busy queue's
// fetcher uses it so a pop carries a batch rather than the one or two
// slots that happened to be free: handlers release slots one by one.
func (s *slots) topUp(ctx context.Context, n, min, want int, wait time.Duration) int {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.waiters) == 0 {
			k := minInt(s.free, want-n)
			s.free -= k
			n += k
		}
		if n >= min {
			s.mu.Unlock()
			return n
		}
		released := s.released
		s.watchers++
		s.mu.Unlock()
		var done bool
		select {
		case <-released:
		case <-timer.C:
			done = true
		case <-ctx.Done():
			done = true
		}
		s.mu.Lock()
		s.watchers--
		s.mu.Unlock()
		if done {
			return n
		}
	}
}

func minInt(a, b int) int { return min(a, b) }

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
