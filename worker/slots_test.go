package worker

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	t.Run("TakesWhatIsFree", func(t *testing.T) {
		s := newSlots(5, false)
		n, err := s.acquire(context.Background(), 1, 3)
		if n != 3 || err != nil {
			t.Fatalf("acquire = %d, %v", n, err)
		}
		if n, _ := s.acquire(context.Background(), 1, 3); n != 2 {
			t.Fatalf("second acquire = %d, want the 2 left", n)
		}
	})

	t.Run("CancelWhileWaiting", func(t *testing.T) {
		s := newSlots(0, false)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := s.acquire(ctx, 1, 1); err == nil {
			t.Fatal("acquire with no slots returned without error")
		}
		s.release(1)
		if n, _ := s.acquire(context.Background(), 1, 1); n != 1 {
			t.Fatal("the slot released after a cancelled wait was lost")
		}
	})

	// With strict priority the heaviest waiter is served first; weighted,
	// each waiter's share follows its weight.
	t.Run("StrictServesHeaviest", func(t *testing.T) {
		s := newSlots(0, true)
		got := make(chan int, 3)
		var wg sync.WaitGroup
		for _, w := range []int{1, 5, 3} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.acquire(context.Background(), w, 1); err == nil {
					got <- w
				}
			}()
		}
		waitWaiters(t, s, 3)
		for _, want := range []int{5, 3, 1} {
			s.release(1)
			if w := <-got; w != want {
				t.Fatalf("served weight %d, want %d", w, want)
			}
		}
		wg.Wait()
	})

	t.Run("WeightedShares", func(t *testing.T) {
		s := newSlots(0, false)
		counts := map[int]int{}
		for range 3000 {
			s.waiters = []*waiter{{weight: 1, want: 1, ch: make(chan int, 1)}, {weight: 3, want: 1, ch: make(chan int, 1)}}
			counts[s.waiters[s.pick()].weight]++
		}
		if r := float64(counts[3]) / float64(counts[1]); r < 2.5 || r > 3.6 {
			t.Fatalf("weight 3 served %.2f times as often as weight 1, want about 3", r)
		}
	})
}

func waitWaiters(t *testing.T, s *slots, n int) {
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
// free (not at the first release), and with what it has when the wait ends.
func TestSlotsTopUp(t *testing.T) {
	ctx := context.Background()
	s := newSlots(8, false)
	if n, _ := s.acquire(ctx, 1, 8); n != 8 {
		t.Fatalf("acquired %d, want 8", n)
	}
	got := make(chan int, 1)
	start := time.Now()
	go func() { got <- s.topUp(ctx, 0, 4, 8, 5*time.Second) }()
	for range 3 {
		s.release(1)
		select {
		case n := <-got:
			t.Fatalf("topUp returned %d after fewer than 4 releases", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.release(1)
	select {
	case n := <-got:
		if n != 4 {
			t.Fatalf("topUp got %d slots, want 4", n)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("topUp returned after %v, not when the fourth slot came", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("topUp did not return when 4 slots were free")
	}

	// the wait ends first: topUp keeps what it has and takes what is free
	s.release(1)
	if n := s.topUp(ctx, 2, 8, 8, 30*time.Millisecond); n != 3 {
		t.Fatalf("topUp after its wait: %d slots, want 2 held + 1 free", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.watchers) != 0 || s.free != 0 {
		t.Fatalf("after topUp: %d watchers, %d free; want none", len(s.watchers), s.free)
	}
}
