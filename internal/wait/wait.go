// Package wait holds the waits the worker's loops share: a backoff
// across failures, a sleep that ends with its context, and a wait for a
// WaitGroup bounded by a context.
package wait

import (
	"context"
	"sync"
	"time"
)

// Backoff doubles a wait from 20ms to 1s across consecutive failures.
type Backoff struct{ d time.Duration }

// Sleep waits the next wait, or until ctx ends.
func (b *Backoff) Sleep(ctx context.Context) { Sleep(ctx, b.Next()) }

// Next returns the wait after one more failure.
func (b *Backoff) Next() time.Duration {
	b.d = min(max(b.d*2, 20*time.Millisecond), time.Second)
	return b.d
}

// Reset starts the waits over, after a success.
func (b *Backoff) Reset() { b.d = 0 }

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Group waits for wg until ctx ends, and reports whether wg finished.
func Group(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
