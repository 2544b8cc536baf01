// Package rcall bounds a Redis call by its caller's context.
package rcall

import (
	"context"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// Do runs fn, a call on c, and returns its error, or returns the context's
// error as soon as ctx is done, even while fn is still blocked. fn must only
// write variables the caller reads after a nil error.
//
// go-redis bounds a read by a context's deadline only when the client was
// built with ContextTimeoutEnabled; otherwise a hung server holds a call
// for ReadTimeout whatever the context says. So Do runs fn in a goroutine
// of its own and waits for whichever ends first. That hand-off costs an
// unpipelined Enqueue a measurable share of its throughput
// (BenchmarkEnqueueDeadline in package queue; see BENCHMARKS.md), so Do
// skips it where go-redis bounds the call by itself: when ctx can never
// end, or when it has a deadline and c has ContextTimeoutEnabled (then a
// cancel before the deadline is noticed once the call returns).
func Do(ctx context.Context, c redis.UniversalClient, fn func() error) error {
	if ctx.Done() == nil {
		return fn()
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if Inline(ctx, c) {
		return Settle(ctx, fn())
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Inline reports whether Do runs a call on ctx on the caller's goroutine:
// when ctx can never end, or has a deadline that c's reads and writes
// honour. A hot caller that checks it first calls directly, then passes
// the call's error to Settle, and makes no closure for Do.
func Inline(ctx context.Context, c redis.UniversalClient) bool {
	if ctx.Done() == nil {
		return true
	}
	_, ok := ctx.Deadline()
	return ok && honorsDeadline(c)
}

// Settle returns what Do returns for err, the error of a call that ran on
// the caller's goroutine (Inline): the context's cause once it is done,
// DeadlineExceeded when the connection's deadline fired just before the
// context's timer, else err.
func Settle(ctx context.Context, err error) error {
	if err == nil || ctx.Done() == nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return err
}

// honorsDeadline reports whether c's own reads and writes stop at a
// context's deadline.
func honorsDeadline(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// IsNil reports whether c is nil, or a nil pointer in a non-nil interface
// (a *redis.Client declared but never set), which would only fail at the
// first call.
func IsNil(c redis.UniversalClient) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Evicting returns Redis's maxmemory-policy when it is not noeviction,
// else "": under memory pressure such a Redis may evict a pending list,
// and its tasks with it. A Redis that forbids CONFIG (managed services)
// reads as "".
func Evicting(ctx context.Context, c redis.UniversalClient) string {
	policy, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if p := policy["maxmemory-policy"]; err == nil && p != "noeviction" {
		return p
	}
	return ""
}

// OneServer reports whether every key c reaches is on one Redis server,
// so a script may write keys of other hash tags than its own: c is a
// *redis.Client (a standalone server, or Sentinel's current master).
// A ClusterClient or a Ring spreads keys over servers.
func OneServer(c redis.UniversalClient) bool {
	_, ok := c.(*redis.Client)
	return ok
}
