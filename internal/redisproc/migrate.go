package redisproc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MigrateSlot moves slot from the master from to the master to, as
// redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on to and
// MIGRATING on from, then MIGRATE of batch keys at a time (pausing pause
// between batches, so the slot stays open long enough for clients to meet
// ASK and TRYAGAIN), then CLUSTER SETSLOT NODE on every master. Keys
// written meanwhile are moved too: it loops until from holds none.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, from, to *Server, batch int, pause time.Duration) error {
	src := redis.NewClient(&redis.Options{Addr: from.Addr, MaxRetries: -1})
	defer src.Close()
	dst := redis.NewClient(&redis.Options{Addr: to.Addr, MaxRetries: -1})
	defer dst.Close()
	srcID, err := src.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("redisproc: migrate: %w", err)
	}
	dstID, err := dst.ClusterMyID(ctx).Result()
	if err != nil {
		return fmt.Errorf("redisproc: migrate: %w", err)
	}
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		return fmt.Errorf("redisproc: SETSLOT %d IMPORTING on %s: %w", slot, to.Addr, err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		return fmt.Errorf("redisproc: SETSLOT %d MIGRATING on %s: %w", slot, from.Addr, err)
	}
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			return fmt.Errorf("redisproc: GETKEYSINSLOT %d: %w", slot, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			return fmt.Errorf("redisproc: MIGRATE %d keys of slot %d: %w", len(keys), slot, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	// the target first, so it owns the slot before the source lets go
	for _, s := range append([]*Server{to, from}, c.mastersBut(ctx, from, to)...) {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		err := rdb.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		_ = rdb.Close()
		if err != nil {
			return fmt.Errorf("redisproc: SETSLOT %d NODE on %s: %w", slot, s.Addr, err)
		}
	}
	return nil
}

// mastersBut returns the running masters other than a and b.
func (c *Cluster) mastersBut(ctx context.Context, a, b *Server) []*Server {
	var out []*Server
	for _, s := range c.Running() {
		if s == a || s == b {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		info, err := rdb.Info(ctx, "replication").Result()
		_ = rdb.Close()
		if err == nil && strings.Contains(info, "role:master") {
			out = append(out, s)
		}
	}
	return out
}
