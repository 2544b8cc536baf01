package rcall

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
)

func TestDo(t *testing.T) {
	t.Run("ReturnsFnError", func(t *testing.T) {
		want := errors.New("boom")
		if err := Do(context.Background(), nil, func() error { return want }); err != want {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ReturnsAtDeadlineWhileFnBlocks", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		release := make(chan struct{})
		defer close(release)
		start := time.Now()
		err := Do(ctx, nil, func() error { <-release; return nil })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
	t.Run("CauseIsKept", func(t *testing.T) {
		cause := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		ran := false
		if err := Do(ctx, nil, func() error { ran = true; return nil }); err != cause || ran {
			t.Fatalf("err = %v, ran %v; want the cause and fn not run", err, ran)
		}
	})
}

// TestDoOnHungRedis: on a server that stopped answering, a call returns by
// its context's deadline, whether go-redis bounds it (ContextTimeoutEnabled,
// no watcher goroutine) or not; and a cancel ends a call at once when the
// context has no deadline.
func TestDoOnHungRedis(t *testing.T) {
	srv := redistest.Start(t)
	plain := srv.Client(t)
	bounded := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = bounded.Close() })
	for _, c := range []*redis.Client{plain, bounded} {
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	srv.Pause(t)
	defer srv.Resume(t)
	for _, c := range []*redis.Client{plain, bounded} {
		name := map[bool]string{false: "plain client", true: "ContextTimeoutEnabled"}[c.Options().ContextTimeoutEnabled]
		t.Run(name+"/Deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := Do(ctx, c, func() error { return c.Get(ctx, "k").Err() })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("returned after %v, want about 200ms", d)
			}
		})
		t.Run(name+"/Cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			err := Do(ctx, c, func() error { return c.Get(ctx, "k").Err() })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("returned after %v, want about 200ms", d)
			}
		})
	}
}

// BenchmarkDo compares a call with a deadline on a plain client (a watcher
// goroutine per call) and on one with ContextTimeoutEnabled (none).
func BenchmarkDo(b *testing.B) {
	srv := redistest.Start(b)
	for _, enabled := range []bool{false, true} {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: enabled})
		b.Run(map[bool]string{false: "plain", true: "ContextTimeoutEnabled"}[enabled], func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if err := Do(ctx, c, func() error { return c.Ping(ctx).Err() }); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = c.Close()
	}
}
