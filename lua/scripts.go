package lua

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua include/*.lua
var files embed.FS

// registry holds every embedded script, resolved once at start-up.
var registry = mustResolveAll(files)

// Scripts run by the queue and the worker. Each file's header is its contract.
var (
	Enqueue        = registry["enqueue"]
	EnqueueOne     = registry["enqueue_one"]
	EnqueueCapped  = registry["enqueue_capped"]
	PartitionState = registry["partition_state"]
	Counts         = registry["counts"]
	GetTask        = registry["get_task"]
	PurgePending   = registry["purge_pending"]
	ReadFeed       = registry["read_feed"]
	RateSample     = registry["rate_sample"]
	TombPending    = registry["tomb_pending"]

	Pop       = registry["pop"]
	Claim     = registry["claim"]
	Ack       = registry["ack"]
	Fail      = registry["fail"]
	Extend    = registry["extend"]
	Requeue   = registry["requeue"]
	LeasesOf  = registry["leases_of"]
	Reap      = registry["reap"]
	Forward   = registry["forward"]
	Heartbeat = registry["heartbeat"]
	CronMark  = registry["cron_mark"]

	FlowNotify   = registry["flow_notify"]
	FlowBatchNew = registry["flow_batch_new"]
	FlowAdd      = registry["flow_add"]
	FlowClose    = registry["flow_close"]
	FlowChainNew = registry["flow_chain_new"]
	FlowOutDue   = registry["flow_out_due"]

	QuotaLock   = registry["quota_lock"]
	QuotaReport = registry["quota_report"]
	QuotaSet    = registry["quota_set"]
	QuotaCommit = registry["quota_commit"]

	LayoutFinish = registry["layout_finish"]
)

// Scripts of the standalone primitives.
var (
	shardedPush  = registry["sharded_push"]
	shardedPop   = registry["sharded_pop"]
	shardedLen   = registry["sharded_len"]
	shardedBlock = registry["sharded_block"]
	feedAppend   = registry["feed_append"]
	feedRead     = registry["feed_read"]
	counterIncr  = registry["counter_incr"]
	semAcquire   = registry["sem_acquire"]
	semRefresh   = registry["sem_refresh"]
	semRelease   = registry["sem_release"]
)

// All returns every embedded script, sorted by name.
func All() []*Script {
	out := make([]*Script, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// LoadAll puts every script into the server's script cache, so pipelines
// start without a NOSCRIPT round. In a cluster, go-redis sends SCRIPT LOAD
// to every master.
func LoadAll(ctx context.Context, c redis.Scripter) error {
	for _, s := range All() {
		if err := s.Load(ctx, c); err != nil {
			return fmt.Errorf("lua: load %s: %w", s.name, err)
		}
	}
	return nil
}

// ResolveAll resolves every top-level .lua file of fsys into a Script.
func ResolveAll(fsys fs.FS) (map[string]*Script, error) {
	names, err := fs.Glob(fsys, "*.lua")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Script, len(names))
	for _, file := range names {
		name := strings.TrimSuffix(file, ".lua")
		src, err := Resolve(fsys, name)
		if err != nil {
			return nil, err
		}
		out[name] = NewScript(name, src)
	}
	return out, nil
}

func mustResolveAll(fsys fs.FS) map[string]*Script {
	m, err := ResolveAll(fsys)
	if err != nil {
		panic(err) // embedded files are part of the build: a test fails first
	}
	return m
}
