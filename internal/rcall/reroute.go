package rcall

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Reroute makes a cluster client reload its slot map (in the background,
// coalesced by go-redis) after a call failed in a way that may mean the
// map is stale: a connection error (the node died; go-redis reloads only
// on MOVED and then once a minute, so until then every call for the dead
// master's slots would go to it) or a refusal a failover brings
// (CLUSTERDOWN, READONLY, MASTERDOWN, TRYAGAIN). It does nothing for
// other clients, a nil error, redis.Nil, a cancelled context or any other
// answer of the server.
func Reroute(c redis.UniversalClient, err error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || !stale(err) {
		return
	}
	cc.ReloadState(context.Background())
}

// stale reports an error after which a cluster's slot map should be
// reloaded.
func stale(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return true // connection refused, reset, EOF, timeout
	}
	msg := re.Error()
	for _, p := range []string{"CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// RerouteHook is a go-redis hook for a ClusterClient that calls Reroute
// after every failed command or pipeline. queue.NewRedisClient installs
// it on the cluster clients it makes.
type RerouteHook struct {
	Client *redis.ClusterClient
}

// DialHook passes dials through.
func (h RerouteHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook reroutes after a failed command.
func (h RerouteHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		Reroute(h.Client, err)
		return err
	}
}

// ProcessPipelineHook reroutes after a pipeline with a failed command.
func (h RerouteHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if stale(cmd.Err()) {
				Reroute(h.Client, cmd.Err())
				break
			}
		}
		return err
	}
}
