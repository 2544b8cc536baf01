package queue

import (
	"context"
	"fmt"

	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/rcall"
)

// claim makes the protocol check (internal/protocol.ClaimForProducer)
// before this client's first write, one round trip once: a prefix of
// another major, or running workers that could not read what this client
// writes, refuse the call. A refused or failed check is made again by the
// next call, so the client works once the workers are upgraded.
// The error names what was refused.
func (c *Client) claim(ctx context.Context, what string) error {
	if c.claimed.Load() {
		return nil
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	if c.claimed.Load() {
		return nil
	}
	err := rcall.Do(ctx, c.rdb, func() error {
		return protocol.ClaimForProducer(ctx, c.rdb, c.cfg.Prefix, protocol.Current, protocol.Live)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, redisError(err))
	}
	c.claimed.Store(true)
	return nil
}
