// Package rcall bounds a Redis call by its caller's context.
package rcall

import "context"

// Do runs fn and returns its error, or returns the context's error as soon
// as ctx is done, even while fn is still blocked. go-redis applies a
// context's deadline to reads only when the client was built with
// ContextTimeoutEnabled; with the default options a hung server holds a
// call for ReadTimeout whatever the context says. fn must only write
// variables the caller reads after a nil error.
func Do(ctx context.Context, fn func() error) error {
	if ctx.Done() == nil {
		return fn()
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
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
