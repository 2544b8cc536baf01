package protocol

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
)

// Gate is a producer's claim, made before its first write and then never
// again: Pass runs ClaimForProducer until one succeeds. A refused or
// failed claim is made again by the next call, so a producer works once
// the old workers stopped.
type Gate struct {
	mu     sync.Mutex // one claim at a time
	passed atomic.Bool
}

// Passed reports whether a claim succeeded: a hot caller checks it
// before it makes Pass's arguments.
func (g *Gate) Passed() bool { return g.passed.Load() }

// Pass returns nil once a claim for prefix succeeded; it bounds the claim
// by ctx as rcall.Do does.
func (g *Gate) Pass(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if g.passed.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.passed.Load() {
		return nil
	}
	err := rcall.Do(ctx, rdb, func() error { return ClaimForProducer(ctx, rdb, prefix, Current, Live) })
	if err == nil {
		g.passed.Store(true)
	}
	return err
}
