package outbox

import (
	"slices"
	"testing"
)

// woken reports whether b's flusher has a wake-up token, and takes it.
func woken[T any](b *Box[T]) bool {
	select {
	case <-b.Ready():
		return true
	default:
		return false
	}
}

// TestBox: outcomes come out oldest first; the first one wakes the flusher
// unless a fetcher carries, and the last carrier to stop wakes it for what
// waits; TakeUncarried leaves them to a carrier; what a fetcher could not
// write goes back ahead of the newer ones.
func TestBox(t *testing.T) {
	t.Parallel()
	b := New[int]()
	b.Put(1)
	b.Put(2)
	if !woken(b) || woken(b) {
		t.Fatal("the first outcome wakes the flusher once")
	}
	if got := b.Take(1); !slices.Equal(got, []int{1}) || b.Len() != 1 {
		t.Fatalf("Take(1) = %v, %d left", got, b.Len())
	}
	b.Carrying(true)
	b.Take(10)
	b.Put(3)
	if woken(b) {
		t.Fatal("an outcome a fetcher will carry woke the flusher")
	}
	if got := b.TakeUncarried(10); got != nil {
		t.Fatalf("TakeUncarried while a fetcher carries: %v", got)
	}
	b.Carrying(false)
	if !woken(b) {
		t.Fatal("the last carrier stopped with outcomes waiting: no wake-up")
	}
	b.GiveBack([]int{7, 8})
	if got := b.TakeUncarried(10); !slices.Equal(got, []int{7, 8, 3}) || b.Len() != 0 {
		t.Fatalf("after GiveBack: %v", got)
	}
	if b.Take(10) != nil {
		t.Fatal("an empty box gave outcomes")
	}
}
