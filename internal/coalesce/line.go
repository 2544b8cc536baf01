// Package coalesce lets concurrent calls to one place share round trips.
// A Line is one place's line of calls: up to a depth of calls go out at
// once, each on its own, and a call that finds the depth reached and a
// call of its own place in flight waits in line; when that call returns,
// the calls in line go out together as one, sent by the returning
// caller's goroutine or one of its own. Nobody waits for more than a call
// ahead and its own: no timer holds a call back to gather more. The queue
// package's Client coalesces single enqueues per partition with it.
package coalesce

import (
	"context"
	"sync"
	"sync/atomic"
)

// Line is one place's line of waiting calls, each carrying an item T and
// told an outcome R.
type Line[T, R any] struct {
	mu       sync.Mutex
	inFlight int             // calls of the place in flight
	waiting  []*Waiter[T, R] // calls to send when one returns
}

// Waiter is one call in line: its item, and once sent, its outcome.
type Waiter[T, R any] struct {
	// Item is a copy of the caller's: the caller's stays on its stack.
	Item T
	// ctx is the caller's: the shared call carries the values (a trace
	// span, for one) of its first caller's, not its deadline
	ctx context.Context
	// taken is set, under the line's lock, when the item goes into a
	// shared call: from then on the caller may leave but not take it back
	taken bool
	call  *Call
	done  chan struct{} // closed when out and err are set
	out   R
	err   error
}

// Call is the shared call of the waiters TakeOrIdle returned. Its context
// ends when every one of them has left: a shared call is bounded by its
// callers' contexts, as a call of one caller is bounded by that caller's.
type Call struct {
	// Ctx is the call's context: its own, not any caller's, since one
	// caller giving up must not decide the others' outcome. It keeps the
	// first caller's values, so the call's span has that caller's for a
	// parent.
	Ctx     context.Context
	cancel  context.CancelFunc
	waiting atomic.Int32 // callers still waiting for the outcome
}

// End ends the shared call's context, once it returned.
func (c *Call) End() { c.cancel() }

// leave counts a caller out, and ends the call when none is left.
func (c *Call) leave() {
	if c.waiting.Add(-1) == 0 {
		c.cancel()
	}
}

// Join returns nil and counts the caller's call in flight, in the line and
// in all (the callers' count over every line), when the place has none in
// flight or fewer than depth are in flight in all: the caller makes its
// call itself and then calls TakeOrIdle. Otherwise it puts a copy of
// *item in line and returns its waiter, for Await.
func (l *Line[T, R]) Join(ctx context.Context, item *T, depth int64, all *atomic.Int64) *Waiter[T, R] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == 0 || all.Load() < depth {
		l.inFlight++
		all.Add(1)
		return nil
	}
	w := &Waiter[T, R]{Item: *item, ctx: ctx, done: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	return w
}

// TakeOrIdle returns the calls in line, marked taken, to go out as one
// shared call in the place of a call that returned, with that call; or it
// counts that call out and returns nil when there are none. The caller
// tells each waiter its outcome (Tell) and ends the call (Call.End).
func (l *Line[T, R]) TakeOrIdle(all *atomic.Int64) ([]*Waiter[T, R], *Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := l.waiting
	if len(ws) == 0 {
		l.inFlight--
		all.Add(-1)
		return nil, nil
	}
	l.waiting = nil
	c := &Call{}
	c.Ctx, c.cancel = context.WithCancel(context.WithoutCancel(ws[0].ctx))
	c.waiting.Store(int32(len(ws)))
	for _, w := range ws {
		w.taken, w.call = true, c
	}
	return ws, c
}

// Waiting returns how many calls wait in line.
func (l *Line[T, R]) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}

// Tell gives w its outcome and wakes its caller.
func (w *Waiter[T, R]) Tell(out R, err error) {
	w.out, w.err = out, err
	close(w.done)
}

// Await waits for w's outcome, or for ctx to end: told says which. A
// caller that leaves before its item was taken into a shared call leaves
// nothing written; one that leaves after may still have its item written,
// and once every caller of the shared call has left, the call's context
// ends.
func (l *Line[T, R]) Await(ctx context.Context, w *Waiter[T, R]) (out R, told bool, err error) {
	select {
	case <-w.done:
		return w.out, true, w.err
	case <-ctx.Done():
	}
	select {
	case <-w.done: // both ready: the outcome is known, say it
		return w.out, true, w.err
	default:
	}
	if !l.drop(w) {
		w.call.leave()
	}
	return out, false, ctx.Err()
}

// drop takes w out of line unless its item was taken into a shared call;
// it reports whether it did (nothing of w's was written, nor will be).
func (l *Line[T, R]) drop(w *Waiter[T, R]) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.taken {
		return false
	}
	for i, o := range l.waiting {
		if o == w {
			l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
			break
		}
	}
	return true
}
