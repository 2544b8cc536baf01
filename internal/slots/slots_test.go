package slots

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	t.Run("TakesWhatIsFree", func(t *testing.T) {
		s := New(5, false)
		sh := &Share{weight: 1}
		n, err := s.Acquire(context.Background(), sh, 3)
		if n != 3 || err != nil {
			t.Fatalf("acquire = %d, %v", n, err)
		}
		if n, _ := s.Acquire(context.Background(), sh, 3); n != 2 {
			t.Fatalf("second acquire = %d, want the 2 left", n)
		}
	})

	t.Run("CancelWhileWaiting", func(t *testing.T) {
		s := New(0, false)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		sh := &Share{weight: 1}
		if _, err := s.Acquire(ctx, sh, 1); err == nil {
			t.Fatal("acquire with no slots returned without error")
		}
		s.Release(1)
		if n, _ := s.Acquire(context.Background(), sh, 1); n != 1 {
			t.Fatal("the slot released after a cancelled wait was lost")
		}
	})

	// With strict priority the heaviest waiter is served first; weighted,
	// each waiter's share follows its weight.
	t.Run("StrictServesHeaviest", func(t *testing.T) {
		s := New(0, true)
		got := make(chan int, 3)
		var wg sync.WaitGroup
		for _, w := range []int{1, 5, 3} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Acquire(context.Background(), &Share{weight: w}, 1); err == nil {
					got <- w
				}
			}()
		}
		waitWaiters(t, s, 3)
		for _, want := range []int{5, 3, 1} {
			s.Release(1)
			if w := <-got; w != want {
				t.Fatalf("served weight %d, want %d", w, want)
			}
		}
		wg.Wait()
	})

	// Every queue backlogged, its fetcher back in line as soon as it is
	// served: the slots split exactly by weight, whatever the order.
	t.Run("WeightedShares", func(t *testing.T) {
		s := New(0, false)
		shares := []*Share{{weight: 1}, {weight: 6}, {weight: 3}}
		counts := serve(s, shares, 1000, nil)
		if counts[1] != 600 || counts[2] != 300 || counts[0] != 100 {
			t.Fatalf("weights 1, 6, 3 served %v of 1000 slots, want 100, 600, 300", counts)
		}
	})

	// A queue that waits rarely (its fetcher is out popping while the
	// others queue up) still gets its share: here the heaviest queue is
	// in line only every other round, yet it is served first when it is.
	t.Run("RarelyWaitingKeepsItsShare", func(t *testing.T) {
		s := New(0, false)
		shares := []*Share{{weight: 6}, {weight: 3}, {weight: 1}}
		round := 0
		counts := serve(s, shares, 1000, func(i int) bool { round++; return i != 0 || round%2 == 0 })
		if counts[0] < 450 {
			t.Fatalf("weights 6, 3, 1 with the first in line half the time: %v of 1000, want the first near its 600", counts)
		}
	})

	// A queue back from idle starts level: it gets its share from then on,
	// not a burst for the time it had nothing to run.
	t.Run("RejoinEarnsNoCredit", func(t *testing.T) {
		s := New(0, false)
		busy, back := &Share{weight: 1}, &Share{weight: 1}
		serve(s, []*Share{busy}, 500, nil)
		s.Rejoin(back)
		counts := serve(s, []*Share{busy, back}, 100, nil)
		if counts[1] > 55 {
			t.Fatalf("after idling, an equal queue took %d of the next 100 slots, want about 50", counts[1])
		}
	})
}

// serve hands out n slots one at a time to shares whose fetchers wait in
// line (all of them, or those inLine allows), putting each served share
// back in line, and returns how many slots each share got.
func serve(s *Slots, shares []*Share, n int, inLine func(i int) bool) []int {
	counts := make([]int, len(shares))
	waiting := make([]*waiter, len(shares))
	for served := 0; served < n; {
		s.mu.Lock()
		for i, sh := range shares {
			if waiting[i] == nil && (inLine == nil || inLine(i)) {
				waiting[i] = &waiter{share: sh, want: 1, ch: make(chan int, 1)}
				s.waiters = append(s.waiters, waiting[i])
			}
		}
		s.free++
		s.grant()
		s.mu.Unlock()
		for i, w := range waiting {
			if w == nil {
				continue
			}
			select {
			case k := <-w.ch:
				counts[i] += k
				served += k
				waiting[i] = nil
			default:
			}
		}
	}
	s.mu.Lock()
	s.waiters = nil
	s.mu.Unlock()
	return counts
}

func waitWaiters(t *testing.T, s *Slots, n int) {
	t.Helper()
	for range 200 {
		s.mu.Lock()
		k := len(s.waiters)
		s.mu.Unlock()
		if k == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("waiters never reached %d", n)
}

// TestSlotsTopUp: a busy fetcher's topUp returns once enough slots are
// free (not at the first release), and with what it has when the wait
// ends. Its wait here is an hour, so only the fourth release can end it:
// no wall-clock window decides the outcome.
func TestSlotsTopUp(t *testing.T) {
	ctx := context.Background()
	s := New(8, false)
	sh := &Share{weight: 1}
	if n, _ := s.Acquire(ctx, sh, 8); n != 8 {
		t.Fatalf("acquired %d, want 8", n)
	}
	got := make(chan int, 1)
	go func() { got <- s.TopUp(ctx, sh, 0, 4, 8, time.Hour) }()
	for range 3 {
		s.Release(1)
		select {
		case n := <-got:
			t.Fatalf("topUp returned %d after fewer than 4 releases", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.Release(1)
	select {
	case n := <-got:
		if n != 4 {
			t.Fatalf("topUp got %d slots, want 4", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("topUp did not return when 4 slots were free")
	}

	// the wait ends first: topUp keeps what it has and takes what is free
	s.Release(1)
	if n := s.TopUp(ctx, sh, 2, 8, 8, 30*time.Millisecond); n != 3 {
		t.Fatalf("topUp after its wait: %d slots, want 2 held + 1 free", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) != 0 || s.free != 0 {
		t.Fatalf("after topUp: %d waiting, %d free; want none", len(s.waiters), s.free)
	}
}

// TestSlotsTopUpBesideIdle: a fetcher blocked on an empty queue keeps a
// slot for what arrives there. A busy fetcher's batch does not count on
// that slot: its topUp for all 8 returns once the other 7 are free, though
// its wait is an hour, and the held slot comes back after the block.
func TestSlotsTopUpBesideIdle(t *testing.T) {
	ctx := context.Background()
	s := New(8, false)
	busy, idle := &Share{weight: 1}, &Share{weight: 1}
	if n, _ := s.Acquire(ctx, idle, 1); n != 1 {
		t.Fatalf("the idle queue acquired %d, want 1", n)
	}
	if n, _ := s.Acquire(ctx, busy, 7); n != 7 {
		t.Fatalf("the busy queue acquired %d, want 7", n)
	}
	s.Park(1, 1) // the idle fetcher found nothing and blocks, holding its slot
	got := make(chan int, 1)
	go func() { got <- s.TopUp(ctx, busy, 0, 8, 8, time.Hour) }()
	for range 6 {
		s.Release(1)
	}
	select {
	case n := <-got:
		t.Fatalf("topUp returned %d with 6 of 7 slots free", n)
	case <-time.After(20 * time.Millisecond):
	}
	s.Release(1)
	select {
	case n := <-got:
		if n != 7 {
			t.Fatalf("topUp got %d slots, want the 7 not held", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("topUp waited for the slot the blocked fetcher holds")
	}
	s.Unpark(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 1 || s.idle != 0 {
		t.Fatalf("after the block: %d free, %d held; want 1 and 0", s.free, s.idle)
	}
}

// TestSlotsTry: tryAcquire and tryTopUp take what acquire and topUp take
// without waiting, and take nothing, leaving the line as it was, where
// those would wait.
func TestSlotsTry(t *testing.T) {
	s := New(8, false)
	sh := &Share{weight: 1}
	if n := s.TryAcquire(sh, 6); n != 6 {
		t.Fatalf("tryAcquire with 8 free: %d, want 6", n)
	}
	if n, ok := s.TryTopUp(sh, 0, 8, 8); ok || n != 0 {
		t.Fatalf("tryTopUp for 8 with 2 free: %d, %v; want it to wait", n, ok)
	}
	if n, ok := s.TryTopUp(sh, 6, 8, 8); !ok || n != 8 {
		t.Fatalf("tryTopUp from 6 to 8 with 2 free: %d, %v; want 8", n, ok)
	}
	if n := s.TryAcquire(sh, 1); n != 0 {
		t.Fatalf("tryAcquire with none free: %d, want 0", n)
	}
	if n, ok := s.TryTopUp(sh, 8, 8, 8); !ok || n != 8 {
		t.Fatalf("tryTopUp holding all it wants: %d, %v", n, ok)
	}
	s.Release(8)
	// one waits in line: the others queue behind it
	s.mu.Lock()
	w := s.join(sh, 9, 9, true)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.leave(w)
		s.mu.Unlock()
	}()
	if n := s.TryAcquire(sh, 1); n != 0 {
		t.Fatalf("tryAcquire behind a waiter: %d, want 0", n)
	}
	if n, ok := s.TryTopUp(sh, 0, 4, 4); ok || n != 0 {
		t.Fatalf("tryTopUp behind a waiter: %d, %v; want it to wait", n, ok)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 8 || len(s.waiters) != 1 {
		t.Fatalf("after the tries: %d free, %d waiting; want 8 and 1", s.free, len(s.waiters))
	}
}
