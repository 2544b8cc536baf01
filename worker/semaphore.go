package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/lua"
	"github.com/shardq/shardq/queue"
)

// SemaphoreOption sets how a Semaphore middleware waits and holds its slots.
type SemaphoreOption func(*semaphoreOptions)

type semaphoreOptions struct {
	wait, retryIn, ttl time.Duration
	prefix             string
}

// SemaphoreWait sets how long a task waits for a slot before it is
// snoozed. Defaults to 0: one try.
func SemaphoreWait(d time.Duration) SemaphoreOption {
	return func(o *semaphoreOptions) { o.wait = d }
}

// SemaphoreRetryIn sets how long a task that got no slot is snoozed, with
// up to a fifth more of jitter. Defaults to 1s.
func SemaphoreRetryIn(d time.Duration) SemaphoreOption {
	return func(o *semaphoreOptions) { o.retryIn = d }
}

// SemaphoreTTL sets how long a slot outlives a worker that stopped
// refreshing it. Defaults to 30s.
func SemaphoreTTL(d time.Duration) SemaphoreOption {
	return func(o *semaphoreOptions) { o.ttl = d }
}

// SemaphorePrefix sets the key prefix of the semaphore, as
// queue.Config.Prefix does for queues. Defaults to queue.DefaultPrefix.
func SemaphorePrefix(p string) SemaphoreOption {
	return func(o *semaphoreOptions) { o.prefix = p }
}

// Semaphore returns middleware that runs each handler only while it holds
// one of limit slots of the semaphore name. Every worker that uses the same
// name shares the slots, whatever queues it serves: "at most 10 calls to
// the billing API at once, across the fleet". A task that gets no slot
// within SemaphoreWait is snoozed for SemaphoreRetryIn: it goes back to its
// queue without costing an attempt and holds no worker slot meanwhile.
// While the handler runs, its slot is refreshed every SemaphoreTTL/3.
// Should the slot be lost anyway, the handler's context is cancelled with
// ErrSemaphoreLost. A bad name, a limit below 1 or a bad option is
// ErrInvalidConfig here, before any task runs.
func Semaphore(rdb redis.UniversalClient, name string, limit int, opts ...SemaphoreOption) (Middleware, error) {
	o := semaphoreOptions{retryIn: time.Second, ttl: 30 * time.Second, prefix: queue.DefaultPrefix}
	for _, opt := range opts {
		opt(&o)
	}
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, fmt.Errorf("%w: semaphore name: %w", ErrInvalidConfig, err)
	}
	if err := queue.ValidateQueueName(o.prefix); err != nil {
		return nil, fmt.Errorf("%w: semaphore %s prefix: %w", ErrInvalidConfig, name, err)
	}
	switch {
	case limit < 1:
		return nil, fmt.Errorf("%w: semaphore %s limit %d, want > 0", ErrInvalidConfig, name, limit)
	case o.ttl < time.Millisecond:
		return nil, fmt.Errorf("%w: semaphore %s TTL %v, want >= 1ms", ErrInvalidConfig, name, o.ttl)
	case o.wait < 0 || o.retryIn < 0:
		return nil, fmt.Errorf("%w: semaphore %s: negative wait %v or retry %v", ErrInvalidConfig, name, o.wait, o.retryIn)
	}
	sem := &lua.FairSemaphore{Key: keys.Semaphore(o.prefix, name), Limit: limit, TTL: o.ttl}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Task) error {
			holder := fmt.Sprintf("%s:%d", t.ID, t.Attempt)
			ok, err := sem.AcquireWait(ctx, rdb, holder, o.wait)
			if err != nil {
				return fmt.Errorf("acquire semaphore %s: %w", name, err)
			}
			if !ok {
				jitter := time.Duration(rand.Int64N(int64(o.retryIn)/5 + 1))
				return Snooze(o.retryIn + jitter)
			}
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			stop := make(chan struct{})
			defer close(stop)
			go refreshSlot(ctx, rdb, sem, name, holder, cancel, stop)
			defer func() { _ = sem.Release(context.WithoutCancel(ctx), rdb, holder) }()
			return next.ProcessTask(ctx, t)
		})
	}, nil
}

func refreshSlot(ctx context.Context, rdb redis.UniversalClient, sem *lua.FairSemaphore, name, holder string, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	tick := time.NewTicker(max(sem.TTL/3, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if err := sem.Refresh(ctx, rdb, holder); err != nil {
				if ctx.Err() == nil {
					cancel(fmt.Errorf("%w: %s: %v", ErrSemaphoreLost, name, err))
				}
				return
			}
		}
	}
}
