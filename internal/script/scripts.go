// Package script is the registry of the engine's Lua scripts: every .lua
// file of package lua, resolved once at start-up. The codes they return
// are named in internal/codes.
package script

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/scriptsrc"
	_ "github.com/shardq/shardq/lua" // sets scriptsrc.FS
)

// registry holds every embedded script, resolved once at start-up.
var registry = mustResolveAll()

// Scripts run by the queue and the worker. Each file's header is its contract.
var (
	Enqueue        = registry["enqueue"]
	EnqueueOne     = registry["enqueue_one"]
	EnqueueCapped  = registry["enqueue_capped"]
	PartitionState = registry["partition_state"]
	Counts         = registry["counts"]
	GetTask        = registry["get_task"]
	PurgePending   = registry["purge_pending"]
	RateSample     = registry["rate_sample"]
	TombPending    = registry["tomb_pending"]

	Pop       = registry["pop"]
	Claim     = registry["claim"]
	Ack       = registry["ack"]
	Fail      = registry["fail"]
	Extend    = registry["extend"]
	Step      = registry["step"]
	Requeue   = registry["requeue"]
	LeasesOf  = registry["leases_of"]
	Reap      = registry["reap"]
	Forward   = registry["forward"]
	Heartbeat = registry["heartbeat"]
	CronMark  = registry["cron_mark"]

	HomeNotify = registry["home_notify"]
	HomeOutDue = registry["home_out_due"]

	WorkflowAdd    = registry["workflow_add"]
	WorkflowCancel = registry["workflow_cancel"]

	QuotaLock   = registry["quota_lock"]
	QuotaReport = registry["quota_report"]
	QuotaSet    = registry["quota_set"]
	QuotaCommit = registry["quota_commit"]

	LayoutFinish = registry["layout_finish"]

	ShardedBlock = registry["sharded_block"]

	FairKey  = registry["fair_key"]
	FairKeys = registry["fair_keys"]
)

// All returns every embedded script, sorted by name.
func All() []*rcall.Script {
	out := make([]*rcall.Script, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// LoadAll puts every script into the server's script cache, so pipelines
// start without a NOSCRIPT round. It asks first, in one SCRIPT EXISTS, and
// sends only the scripts the server lacks: the sources weigh megabytes,
// and Redis hashes each one it is sent, so a worker that starts against a
// warm server costs it one call. In a cluster, go-redis asks every master
// and sends SCRIPT LOAD to every master.
func LoadAll(ctx context.Context, c redis.Scripter) error {
	all := All()
	hashes := make([]string, len(all))
	for i, s := range all {
		hashes[i] = s.Hash()
	}
	have, err := c.ScriptExists(ctx, hashes...).Result()
	if err != nil {
		return fmt.Errorf("lua: ask for %d scripts: %w", len(all), err)
	}
	for i, s := range all {
		if i < len(have) && have[i] {
			continue
		}
		if err := s.Load(ctx, c); err != nil {
			return fmt.Errorf("lua: load %s: %w", s.Name(), err)
		}
	}
	return nil
}

func mustResolveAll() map[string]*rcall.Script {
	m, err := rcall.ResolveAll(scriptsrc.FS)
	if err != nil {
		panic(err) // embedded files are part of the build: a test fails first
	}
	return m
}

// Dummy is the item a blocking-pop helper pushes to wake a blocked reader
// (lua/include/dummy.lua). Its first byte, 0xc1, never begins valid
// msgpack; every reader of a shard or an in-flight list drops it.
const Dummy = "\xc1shardq:dummy"
