package rcall

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDo(t *testing.T) {
	t.Run("ReturnsFnError", func(t *testing.T) {
		want := errors.New("boom")
		if err := Do(context.Background(), func() error { return want }); err != want {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ReturnsAtDeadlineWhileFnBlocks", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		release := make(chan struct{})
		defer close(release)
		start := time.Now()
		err := Do(ctx, func() error { <-release; return nil })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
	t.Run("CauseIsKept", func(t *testing.T) {
		cause := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		ran := false
		if err := Do(ctx, func() error { ran = true; return nil }); err != cause || ran {
			t.Fatalf("err = %v, ran %v; want the cause and fn not run", err, ran)
		}
	})
}
