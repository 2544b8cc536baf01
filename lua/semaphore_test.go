package lua

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
)

func TestSemaphore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)

	// Fifty goroutines race for five slots; an in-process gauge of holders
	// (raised after Acquire, lowered before Release) never passes five.
	t.Run("FiftyRacersNeverExceedLimit", func(t *testing.T) {
		sem := &FairSemaphore{Key: "{" + redistest.Prefix(t) + "}:sem", Limit: 5, TTL: time.Minute}
		var holding, peak, acquired atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(15 * time.Second)
		for g := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder := fmt.Sprint("g", g)
				for got := 0; got < 3 && time.Now().Before(deadline); {
					ok, err := sem.Acquire(ctx, rdb, holder, 0)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						time.Sleep(time.Millisecond)
						continue
					}
					got++
					acquired.Add(1)
					n := holding.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					time.Sleep(2 * time.Millisecond)
					holding.Add(-1)
					if err := sem.Release(ctx, rdb, holder); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if p := peak.Load(); p > 5 {
			t.Fatalf("%d holders at once, limit 5", p)
		}
		if p := peak.Load(); p < 2 {
			t.Fatalf("peak holders %d: the semaphore never let racers share", p)
		}
		if a := acquired.Load(); a != 150 {
			t.Fatalf("%d acquisitions, want 150", a)
		}
	})

	t.Run("ExpiredHolderSlotIsReusable", func(t *testing.T) {
		sem := &FairSemaphore{Key: "{" + redistest.Prefix(t) + "}:sem", Limit: 1, TTL: 150 * time.Millisecond}
		ok, err := sem.Acquire(ctx, rdb, "crashed", 0)
		if err != nil || !ok {
			t.Fatalf("first Acquire = %v, %v", ok, err)
		}
		if ok, _ := sem.Acquire(ctx, rdb, "next", 0); ok {
			t.Fatal("second holder got a slot over the limit")
		}
		time.Sleep(250 * time.Millisecond)
		if ok, err := sem.Acquire(ctx, rdb, "next", 0); err != nil || !ok {
			t.Fatalf("Acquire after the holder expired = %v, %v", ok, err)
		}
		if err := sem.Refresh(ctx, rdb, "crashed"); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("expired holder's Refresh: err = %v, want ErrNotHeld", err)
		}
		if err := sem.Release(ctx, rdb, "crashed"); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("expired holder's Release: err = %v, want ErrNotHeld", err)
		}
		holders, err := sem.Holders(ctx, rdb)
		if err != nil || fmt.Sprint(holders) != "[next]" {
			t.Fatalf("Holders = %v, %v", holders, err)
		}
	})

	t.Run("RefreshKeepsSlot", func(t *testing.T) {
		sem := &FairSemaphore{Key: "{" + redistest.Prefix(t) + "}:sem", Limit: 1, TTL: 200 * time.Millisecond}
		if ok, _ := sem.Acquire(ctx, rdb, "a", 0); !ok {
			t.Fatal("Acquire failed")
		}
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			must(t, sem.Refresh(ctx, rdb, "a"))
		}
		if ok, _ := sem.Acquire(ctx, rdb, "b", 0); ok {
			t.Fatal("a refreshed slot was taken")
		}
	})

	t.Run("LimitChangeTakesEffect", func(t *testing.T) {
		sem := &FairSemaphore{Key: "{" + redistest.Prefix(t) + "}:sem", Limit: 1, TTL: time.Minute}
		if ok, _ := sem.Acquire(ctx, rdb, "a", 0); !ok {
			t.Fatal("Acquire failed")
		}
		sem.Limit = 2
		if ok, _ := sem.Acquire(ctx, rdb, "b", 0); !ok {
			t.Fatal("raising the limit did not open a slot")
		}
	})

	t.Run("AcquireWithAWait", func(t *testing.T) {
		sem := &FairSemaphore{Key: "{" + redistest.Prefix(t) + "}:sem", Limit: 1, TTL: time.Minute}
		if ok, _ := sem.Acquire(ctx, rdb, "a", 0); !ok {
			t.Fatal("Acquire failed")
		}
		start := time.Now()
		if ok, err := sem.Acquire(ctx, rdb, "b", 100*time.Millisecond); ok || err != nil {
			t.Fatalf("Acquire with a wait on a full semaphore = %v, %v", ok, err)
		}
		// it gives up at its wait, not before; the upper bound only says it
		// did not hang
		if d := time.Since(start); d < 100*time.Millisecond || d > 10*time.Second {
			t.Fatalf("gave up after %v, want 100ms", d)
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			_ = sem.Release(ctx, rdb, "a")
		}()
		if ok, err := sem.Acquire(ctx, rdb, "b", 2*time.Second); !ok || err != nil {
			t.Fatalf("Acquire with a wait while a slot frees = %v, %v", ok, err)
		}
	})

	t.Run("BadLimitOrTTL", func(t *testing.T) {
		for _, sem := range []*FairSemaphore{{Key: "k", Limit: 0, TTL: time.Second}, {Key: "k", Limit: -1, TTL: time.Second}, {Key: "k", Limit: 1}} {
			if _, err := sem.Acquire(ctx, rdb, "a", 0); !errors.Is(err, ErrInvalid) {
				t.Fatalf("%+v: err = %v, want ErrInvalid", sem, err)
			}
		}
	})
}
