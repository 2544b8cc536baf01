// Package outbox holds a worker's task outcomes waiting to be written.
// Two kinds of writer take from it: the flusher, and a fetcher about to
// pop, which sends them in the same round trip as its pop. On a busy
// queue the outcomes ride along with the next pop, so a pop's tasks cost
// one round trip instead of two (see BENCHMARKS.md), and the flusher
// sleeps: while a fetcher carries, a new outcome does not wake it.
package outbox

import "sync"

// Box holds the outcomes (T) waiting to be written, oldest first.
type Box[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // one token: wakes the flusher
	// carriers counts the fetchers with a backlog: each pops again within
	// the worker's batchWait of a slot coming free, carrying what waits
	// here.
	carriers int
}

// New returns an empty box.
func New[T any]() *Box[T] { return &Box[T]{ready: make(chan struct{}, 1)} }

// Ready is the flusher's wake-up: a token arrives when outcomes wait that
// no fetcher will carry.
func (b *Box[T]) Ready() <-chan struct{} { return b.ready }

// Put adds an outcome and, unless a fetcher will carry it, wakes the
// flusher.
func (b *Box[T]) Put(o T) {
	b.mu.Lock()
	b.items = append(b.items, o)
	wake := len(b.items) == 1 && b.carriers == 0
	b.mu.Unlock()
	if wake {
		b.wake()
	}
}

func (b *Box[T]) wake() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Carrying records that a fetcher starts (on) or stops carrying outcomes
// with its pops. The last one to stop wakes the flusher for what waits.
func (b *Box[T]) Carrying(on bool) {
	b.mu.Lock()
	if on {
		b.carriers++
	} else {
		b.carriers--
	}
	b.mu.Unlock()
	b.WakeIfUncarried()
}

// Take removes and returns up to max outcomes, oldest first.
func (b *Box[T]) Take(max int) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(max)
}

// TakeUncarried is take, but takes nothing while a fetcher carries
// outcomes: it writes them sooner, and in a round trip it makes anyway.
func (b *Box[T]) TakeUncarried(max int) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.carriers > 0 {
		return nil
	}
	return b.takeLocked(max)
}

// WakeIfUncarried wakes the flusher when outcomes wait and no fetcher
// will carry them.
func (b *Box[T]) WakeIfUncarried() {
	b.mu.Lock()
	wake := b.carriers == 0 && len(b.items) > 0
	b.mu.Unlock()
	if wake {
		b.wake()
	}
}

func (b *Box[T]) takeLocked(max int) []T {
	n := min(len(b.items), max)
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	copy(out, b.items)
	rest := copy(b.items, b.items[n:])
	clear(b.items[rest:])
	b.items = b.items[:rest]
	return out
}

// GiveBack returns outcomes a fetcher could not write, ahead of the newer
// ones, and wakes the flusher to retry them.
func (b *Box[T]) GiveBack(os []T) {
	if len(os) == 0 {
		return
	}
	b.mu.Lock()
	b.items = append(os[:len(os):len(os)], b.items...)
	b.mu.Unlock()
	b.wake()
}

// Len returns how many outcomes wait.
func (b *Box[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}
