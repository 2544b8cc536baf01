package lua

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// FairSemaphore is a fair counting semaphore (Redis in Action 11.2.3) over the
// sorted set Key of holder -> expiry. Acquiring drops expired holders and
// takes a slot only while fewer than Limit remain, in one script with the
// server's clock, so a crashed holder frees its slot after TTL and no client
// clock can skew who gets in. Limit and TTL are read on every call: changing
// them takes effect at once.
type FairSemaphore struct {
	Key   string
	Limit int
	TTL   time.Duration
}

func (s *FairSemaphore) validate() error {
	if s.Limit <= 0 {
		return fmt.Errorf("%w: semaphore %s limit %d, want > 0", ErrInvalid, s.Key, s.Limit)
	}
	if s.TTL < time.Millisecond {
		return fmt.Errorf("%w: semaphore %s ttl %v, want >= 1ms", ErrInvalid, s.Key, s.TTL)
	}
	return nil
}

// Acquire takes a slot for holder and reports whether it got one. A holder
// that already holds a slot keeps it and has it refreshed. With a wait
// above 0 it tries until it gets one or wait passes, looking again after
// 5ms, doubling to 100ms; with 0 it tries once.
func (s *FairSemaphore) Acquire(ctx context.Context, c redis.Scripter, holder string, wait time.Duration) (bool, error) {
	if err := s.validate(); err != nil {
		return false, err
	}
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		ok, err := s.acquireOnce(ctx, c, holder)
		if ok || err != nil {
			return ok, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// acquireOnce is one try of Acquire.
func (s *FairSemaphore) acquireOnce(ctx context.Context, c redis.Scripter, holder string) (bool, error) {
	n, err := semAcquire.Run(ctx, c, []string{s.Key}, holder, s.Limit, s.TTL.Milliseconds(), "").Int64()
	return n == 1, err
}

// Refresh extends holder's slot by TTL. It fails with ErrNotHeld when the
// slot expired or was released: the holder must stop what the slot guarded.
func (s *FairSemaphore) Refresh(ctx context.Context, c redis.Scripter, holder string) error {
	if err := s.validate(); err != nil {
		return err
	}
	n, err := semRefresh.Run(ctx, c, []string{s.Key}, holder, s.TTL.Milliseconds(), "").Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s by %q", ErrNotHeld, s.Key, holder)
	}
	return nil
}

// Release gives holder's slot back. It fails with ErrNotHeld when holder had none.
func (s *FairSemaphore) Release(ctx context.Context, c redis.Scripter, holder string) error {
	n, err := semRelease.Run(ctx, c, []string{s.Key}, holder).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s by %q", ErrNotHeld, s.Key, holder)
	}
	return nil
}

// Holders returns the holders whose slots have not expired, by server time.
func (s *FairSemaphore) Holders(ctx context.Context, c redis.Cmdable) ([]string, error) {
	t, err := c.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	return c.ZRangeByScore(ctx, s.Key, &redis.ZRangeBy{Min: fmt.Sprintf("(%d", t.UnixMilli()), Max: "+inf"}).Result()
}
