package worker

import "sync"

// outbox holds the outcomes waiting to be written. Two kinds of writer
// take from it: the flusher, and a fetcher about to pop, which sends them
// in the same round trip as its pop. On a busy queue the outcomes ride
// along with the next pop, so a batch of tasks costs one round trip
// instead of two (see BENCHMARKS.md), and the flusher sleeps: while a
// fetcher carries, a new outcome does not wake it.
type outbox struct {
	mu    sync.Mutex
	items []outcome
	ready chan struct{} // one token: wakes the flusher
	// carriers counts the fetchers with a backlog: each pops again within
	// batchWait of a slot coming free, carrying what waits here.
	carriers int
}

func newOutbox() *outbox { return &outbox{ready: make(chan struct{}, 1)} }

// put adds an outcome and, unless a fetcher will carry it, wakes the
// flusher.
func (b *outbox) put(o outcome) {
	b.mu.Lock()
	b.items = append(b.items, o)
	wake := len(b.items) == 1 && b.carriers == 0
	b.mu.Unlock()
	if wake {
		b.wake()
	}
}

func (b *outbox) wake() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// carrying records that a fetcher starts (on) or stops carrying outcomes
// with its pops. The last one to stop wakes the flusher for what waits.
func (b *outbox) carrying(on bool) {
	b.mu.Lock()
	if on {
		b.carriers++
	} else {
		b.carriers--
	}
	b.mu.Unlock()
	b.wakeIfUncarried()
}

// take removes and returns up to max outcomes, oldest first.
func (b *outbox) take(max int) []outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(max)
}

// takeUncarried is take, but takes nothing while a fetcher carries
// outcomes: it writes them sooner, and in a round trip it makes anyway.
func (b *outbox) takeUncarried(max int) []outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.carriers > 0 {
		return nil
	}
	return b.takeLocked(max)
}

// wakeIfUncarried wakes the flusher when outcomes wait and no fetcher
// will carry them.
func (b *outbox) wakeIfUncarried() {
	b.mu.Lock()
	wake := b.carriers == 0 && len(b.items) > 0
	b.mu.Unlock()
	if wake {
		b.wake()
	}
}

func (b *outbox) takeLocked(max int) []outcome {
	n := min(len(b.items), max)
	if n == 0 {
		return nil
	}
	out := make([]outcome, n)
	copy(out, b.items)
	rest := copy(b.items, b.items[n:])
	clear(b.items[rest:])
	b.items = b.items[:rest]
	return out
}

// giveBack returns outcomes a fetcher could not write, ahead of the newer
// ones, and wakes the flusher to retry them.
func (b *outbox) giveBack(os []outcome) {
	if len(os) == 0 {
		return
	}
	b.mu.Lock()
	b.items = append(os[:len(os):len(os)], b.items...)
	b.mu.Unlock()
	b.wake()
}

// len returns how many outcomes wait.
func (b *outbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}
