package rcall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redirectAttempts bounds how often RunReplicated follows a redirect or
// waits out a refusal (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY,
// LOADING) before it gives the error to its caller.
const redirectAttempts = 8

// RunReplicated runs s and then WAIT replicas timeout on the same
// connection, in one round trip, and returns the script's result and how
// many replicas acknowledged the write. WAIT counts the replicas that have
// every write of its connection so far, so it must share the script's
// connection: on a ClusterClient both go to the master that serves keys[0]
// (go-redis would route a keyless WAIT to any node), on any other client
// (one server, Sentinel's failover client) to the client's one server.
//
// Refusals that mean the script did not run are followed or retried, at
// most a few times: MOVED (after a slot moved or a failover; the slot map
// is reloaded), ASK (a slot being migrated: ASKING to the target, then the
// script), TRYAGAIN, CLUSTERDOWN, READONLY and LOADING (after a short
// wait), NOSCRIPT (the script again with EVAL). A connection error is
// returned as it is, never resent: the script may have run.
//
// The WAITs of all attempts share one timeout: each waits only for what
// is left of it (at least a millisecond), so a call waits for replicas at
// most timeout in all. A refused script's WAIT still runs, since it was
// sent in the same round trip: after a failover, a promoted replica's
// empty script cache answers NOSCRIPT, and its WAIT, on a master that has
// no replica yet, blocks until the timeout.
func RunReplicated(ctx context.Context, c redis.UniversalClient, s *Script, keys []string, replicas int, timeout time.Duration, args ...any) (*redis.Cmd, int, error) {
	cc, cluster := c.(*redis.ClusterClient)
	var node *redis.Client
	asking, eval := false, false
	var err error
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		if cluster && node == nil {
			if node, err = cc.MasterForKey(ctx, keys[0]); err != nil {
				return nil, 0, err
			}
		}
		var pipe redis.Pipeliner
		if cluster {
			pipe = node.Pipeline()
		} else {
			pipe = c.Pipeline()
		}
		if asking {
			pipe.Do(ctx, "ASKING")
		}
		var cmd *redis.Cmd
		if eval {
			cmd = call(ctx, pipe, "eval", s.src, keys, args)
		} else {
			cmd = call(ctx, pipe, "evalsha", s.hash, keys, args)
		}
		// WAIT 0 would block forever: a millisecond at least
		wait := redis.NewIntCmd(ctx, "WAIT", replicas, max(time.Until(deadline).Milliseconds(), 1))
		_ = pipe.Process(ctx, wait)
		_, _ = pipe.Exec(ctx)
		err = cmd.Err()
		if err == nil {
			if err = wait.Err(); err != nil {
				return cmd, 0, fmt.Errorf("WAIT %d %v after %s: %w", replicas, timeout, s.name, err)
			}
			return cmd, int(wait.Val()), nil
		}
		if !isRedisError(err) || attempt == redirectAttempts {
			return cmd, 0, err
		}
		asking = false
		msg := err.Error()
		switch {
		case IsNoScript(err):
			eval = true
		case strings.HasPrefix(msg, "MOVED ") && cluster:
			cc.ReloadState(ctx)
			node = nil
		case strings.HasPrefix(msg, "ASK ") && cluster:
			f := strings.Fields(msg)
			if node = masterAt(ctx, cc, f[len(f)-1]); node == nil {
				return cmd, 0, err
			}
			asking = true
		case IsRefused(err):
			if cluster {
				cc.ReloadState(ctx)
				node = nil
			}
			if err := Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return cmd, 0, err
			}
		default:
			return cmd, 0, err
		}
	}
}

// masterAt returns cc's client for the master at addr, or nil.
func masterAt(ctx context.Context, cc *redis.ClusterClient, addr string) *redis.Client {
	var mu sync.Mutex
	var found *redis.Client
	_ = cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		if c.Options().Addr == addr {
			mu.Lock()
			found = c
			mu.Unlock()
		}
		return nil
	})
	return found
}

// IsRefused reports an error the server answered meaning "not now, and
// nothing ran": TRYAGAIN (a multi-key call while its slot migrates),
// CLUSTERDOWN, READONLY, LOADING, MASTERDOWN. Sending the call again is
// safe.
func IsRefused(err error) bool {
	if err == nil || !isRedisError(err) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"TRYAGAIN ", "CLUSTERDOWN ", "READONLY ", "LOADING ", "MASTERDOWN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isRedisError reports an error the server answered, as opposed to a
// connection or context error after which the command may have run.
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Sleep waits d or until ctx ends, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CheckWaitTimeout returns an error when a WAIT of timeout on c would
// outlast c's read timeout: the read would fail before WAIT answered,
// and the caller could not tell whether its write happened. go-redis
// reads for 3s unless told otherwise; -1 and -2 mean no timeout.
func CheckWaitTimeout(c redis.UniversalClient, timeout time.Duration) error {
	var read time.Duration
	switch c := c.(type) {
	case *redis.Client:
		read = c.Options().ReadTimeout
	case *redis.ClusterClient:
		read = c.Options().ReadTimeout
	default:
		return nil
	}
	if read == 0 {
		read = 3 * time.Second
	}
	if read > 0 && timeout >= read {
		return fmt.Errorf("WaitTimeout %v is not below the Redis client's ReadTimeout %v: "+
			"a WAIT would outlast the read and the write's outcome would be unknown", timeout, read)
	}
	return nil
}
