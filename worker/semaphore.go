package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/lua"
)

// Semaphore returns middleware that runs each handler only while it holds
// a slot of sem: a fleet-wide limit that may span queues ("at most 10
// calls to the billing API at once, across every worker"). A task that
// gets no slot within wait is snoozed for about retryIn: it goes back to
// its queue without costing an attempt and holds no worker slot meanwhile.
// While the handler runs, the slot is refreshed every sem.TTL/3; should it
// be lost anyway, the handler's context is cancelled with ErrSemaphoreLost.
// A semaphore without a positive Limit and TTL, or a negative wait or
// retryIn, is ErrInvalidConfig here, before any task runs.
func Semaphore(rdb redis.UniversalClient, sem *lua.Semaphore, wait, retryIn time.Duration) (Middleware, error) {
	switch {
	case sem == nil || sem.Key == "":
		return nil, fmt.Errorf("%w: Semaphore needs a lua.Semaphore with a Key", ErrInvalidConfig)
	case sem.Limit <= 0:
		return nil, fmt.Errorf("%w: semaphore %s limit %d, want > 0", ErrInvalidConfig, sem.Key, sem.Limit)
	case sem.TTL < time.Millisecond:
		return nil, fmt.Errorf("%w: semaphore %s TTL %v, want >= 1ms", ErrInvalidConfig, sem.Key, sem.TTL)
	case wait < 0 || retryIn < 0:
		return nil, fmt.Errorf("%w: semaphore %s: negative wait %v or retryIn %v", ErrInvalidConfig, sem.Key, wait, retryIn)
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Task) error {
			holder := fmt.Sprintf("%s:%d", t.ID, t.Attempt)
			ok, err := sem.AcquireWait(ctx, rdb, holder, wait)
			if err != nil {
				return fmt.Errorf("acquire semaphore %s: %w", sem.Key, err)
			}
			if !ok {
				jitter := time.Duration(rand.Int64N(int64(retryIn)/5 + 1))
				return Snooze(retryIn + jitter)
			}
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			stop := make(chan struct{})
			defer close(stop)
			go refreshSlot(ctx, rdb, sem, holder, cancel, stop)
			defer func() { _ = sem.Release(context.WithoutCancel(ctx), rdb, holder) }()
			return next.ProcessTask(ctx, t)
		})
	}, nil
}

func refreshSlot(ctx context.Context, rdb redis.UniversalClient, sem *lua.Semaphore, holder string, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	tick := time.NewTicker(max(sem.TTL/3, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if err := sem.Refresh(ctx, rdb, holder); err != nil {
				if ctx.Err() == nil {
					cancel(fmt.Errorf("%w: %s: %v", ErrSemaphoreLost, sem.Key, err))
				}
				return
			}
		}
	}
}
