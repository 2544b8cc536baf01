package worker

import "sync"

// outbox holds the outcomes waiting to be written. Two kinds of writer
// take from it: the flusher, and a fetcher about to pop, which sends them
// in the same round trip as its pop. On a busy queue most outcomes ride
// along with the next pop, so a batch of tasks costs one round trip
// instead of two (see BENCHMARKS.md).
type outbox struct {
	mu    sync.Mutex
	items []outcome
	ready chan struct{} // one token: the outbox went from empty to not
	taken bool          // a fetcher took outcomes since the flusher last looked
}

func newOutbox() *outbox { return &outbox{ready: make(chan struct{}, 1)} }

// put adds an outcome and wakes the flusher.
func (b *outbox) put(o outcome) {
	b.mu.Lock()
	b.items = append(b.items, o)
	wake := len(b.items) == 1
	b.mu.Unlock()
	if wake {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
}

// take removes and returns up to max outcomes, oldest first. byFetcher
// records that a fetcher is carrying outcomes, which tells the flusher the
// server is busy and it may leave the next ones to the fetchers.
func (b *outbox) take(max int, byFetcher bool) []outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.items), max)
	if n == 0 {
		return nil
	}
	out := make([]outcome, n)
	copy(out, b.items)
	rest := copy(b.items, b.items[n:])
	clear(b.items[rest:])
	b.items = b.items[:rest]
	if byFetcher {
		b.taken = true
	}
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
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// len returns how many outcomes wait.
func (b *outbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// fetcherTook reports, and resets, whether a fetcher took outcomes since
// the last call.
func (b *outbox) fetcherTook() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.taken
	b.taken = false
	return t
}
