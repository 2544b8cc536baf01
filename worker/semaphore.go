package worker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/lua"
)

// SemaphoreConfig configures a Semaphore middleware. Its zero fields
// take their defaults; Name and Limit have none.
type SemaphoreConfig struct {
	// Name names the semaphore: every worker that uses the same Name and
	// Prefix shares its slots. Required, a name as queues take.
	Name string
	// Limit is how many handlers hold a slot at once, across the fleet.
	// Required, at least 1; give every worker the same Limit for a Name.
	Limit int
	// Prefix is the key prefix of the semaphore, as queue.Config.Prefix is
	// for queues; it does not follow the worker's. Defaults to
	// "shardq", as queue.Config.Prefix does.
	Prefix string
	// TTL is how long a slot outlives a worker that stopped refreshing it.
	// Defaults to 30s; at least 1ms.
	TTL time.Duration
	// Wait is how long a task waits for a slot before it is snoozed.
	// Defaults to 0: one try.
	Wait time.Duration
	// RetryIn is how long a task that got no slot is snoozed, with up to a
	// fifth more of jitter. Defaults to 1s.
	RetryIn time.Duration
}

// Semaphore returns middleware that runs each handler only while it holds
// one of cfg.Limit slots of the semaphore cfg.Name. Every worker that uses
// the same name shares the slots, whatever queues it serves: "at most 10
// calls to the billing API at once, across the fleet". A task that gets no
// slot within cfg.Wait is snoozed for cfg.RetryIn: it goes back to its
// queue without costing an attempt and holds no worker slot meanwhile.
// While the handler runs, its slot is refreshed every cfg.TTL/3. Should
// the slot be lost anyway, the handler's context is cancelled with a cause
// that wraps ErrLeaseLost and names the semaphore. A bad field is ErrInvalid here, before any task
// runs, with the field and its value.
func Semaphore(rdb redis.UniversalClient, cfg SemaphoreConfig) (Middleware, error) {
	cfg.Prefix = cmp.Or(cfg.Prefix, config.DefaultPrefix)
	cfg.TTL = cmp.Or(cfg.TTL, 30*time.Second)
	cfg.RetryIn = cmp.Or(cfg.RetryIn, time.Second)
	name := cfg.Name
	if err := config.CheckName(name); err != nil {
		return nil, fmt.Errorf("%w: SemaphoreConfig.Name %q: %s", ErrInvalid, name, err)
	}
	if err := config.CheckName(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("%w: semaphore %s: SemaphoreConfig.Prefix %q: %s", ErrInvalid, name, cfg.Prefix, err)
	}
	switch {
	case cfg.Limit < 1:
		return nil, fmt.Errorf("%w: semaphore %s: SemaphoreConfig.Limit %d, want >= 1", ErrInvalid, name, cfg.Limit)
	case cfg.TTL < time.Millisecond:
		return nil, fmt.Errorf("%w: semaphore %s: SemaphoreConfig.TTL %v, want >= 1ms (0: 30s)", ErrInvalid, name, cfg.TTL)
	case cfg.Wait < 0:
		return nil, fmt.Errorf("%w: semaphore %s: SemaphoreConfig.Wait %v, want >= 0", ErrInvalid, name, cfg.Wait)
	case cfg.RetryIn < 0:
		return nil, fmt.Errorf("%w: semaphore %s: SemaphoreConfig.RetryIn %v, want >= 0 (0: 1s)", ErrInvalid, name, cfg.RetryIn)
	}
	sem := &lua.FairSemaphore{Key: keys.Semaphore(cfg.Prefix, name), Limit: cfg.Limit, TTL: cfg.TTL}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Task) error {
			holder := fmt.Sprintf("%s:%d", t.ID, t.Attempt)
			ok, err := sem.Acquire(ctx, rdb, holder, cfg.Wait)
			if err != nil {
				return fmt.Errorf("acquire semaphore %s: %w", name, err)
			}
			if !ok {
				jitter := time.Duration(rand.Int64N(int64(cfg.RetryIn)/5 + 1))
				return Snooze(cfg.RetryIn + jitter)
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
					cancel(fmt.Errorf("%w: not the task's lease, its slot of semaphore %s: %v", ErrLeaseLost, name, err))
				}
				return
			}
		}
	}
}
