package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// nodeCalls counts, per cluster node, the round trips a ClusterClient
// sent it: one per single command, one per pipeline.
type nodeCalls struct {
	mu sync.Mutex
	n  map[string]int
}

// countNodeCalls installs a counter on every node client rdb makes; call
// it before rdb's first command.
func countNodeCalls(rdb *redis.ClusterClient) *nodeCalls {
	c := &nodeCalls{n: map[string]int{}}
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(nodeHook{c, node.Options().Addr}) })
	return c
}

func (c *nodeCalls) add(addr string) {
	c.mu.Lock()
	c.n[addr]++
	c.mu.Unlock()
}

func (c *nodeCalls) reset() {
	c.mu.Lock()
	c.n = map[string]int{}
	c.mu.Unlock()
}

func (c *nodeCalls) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

type nodeHook struct {
	c    *nodeCalls
	addr string
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isHandshake(cmd) && cmd.Name() != "cluster" {
			h.c.add(h.addr)
		}
		return next(ctx, cmd)
	}
}

func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !isHandshake(cmds[0]) {
			h.c.add(h.addr)
		}
		return next(ctx, cmds)
	}
}

// spread returns a queue name whose n partitions land on every master of
// cl (by CLUSTER KEYSLOT of their hash tags).
func spread(t *testing.T, cl *redistest.Cluster, prefix string, n int) string {
	t.Helper()
	for i := range 200 {
		q := fmt.Sprintf("q%d", i)
		seen := map[*redistest.Server]bool{}
		for p := range n {
			seen[cl.MasterOf(t, cl.Slot(t, keys.For(prefix, q, p).T))] = true
		}
		if len(seen) == len(cl.Nodes) {
			return q
		}
	}
	t.Fatalf("no queue name of 200 spreads %d partitions over %d masters", n, len(cl.Nodes))
	return ""
}

// TestInspectorOnCluster: queues whose partitions sit on three masters
// are counted whole by QueueInfo and QueueInfos, and QueueInfos costs one
// round trip per master for the counts (go-redis splits the pipeline by
// node) plus one for the registry, not one per queue or partition.
func TestInspectorOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	calls := countNodeCalls(rdb)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	qa, qb := spread(t, cl, prefix, 3), spread(t, cl, prefix+"x", 4)
	cfg := Config{Prefix: prefix, Partitions: map[string]int{qa: 3, qb: 4, "one": 1}}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	want := map[string]int64{qa: 10, qb: 9, "one": 2}
	for q, n := range want {
		for range n {
			_, err := client.Enqueue(ctx, NewRawTask("t", nil), In(q))
			must(t, err)
		}
	}
	_, err = client.Enqueue(ctx, NewRawTask("t", nil), In(qa), ProcessIn(3600_000_000_000))
	must(t, err)

	for q, n := range want {
		qi, err := insp.QueueInfo(ctx, q)
		must(t, err)
		if qi.Pending != n || qi.Partitions != cfg.partitions(q) {
			t.Errorf("QueueInfo(%s): pending %d over %d partitions, want %d over %d", q, qi.Pending, qi.Partitions, n, cfg.partitions(q))
		}
	}
	calls.reset()
	infos, err := insp.QueueInfos(ctx)
	must(t, err)
	perNode := calls.snapshot()
	got := map[string]int64{}
	for _, qi := range infos {
		got[qi.Queue] = qi.Pending
		if qi.Queue == qa && qi.Scheduled != 1 {
			t.Errorf("QueueInfos: %s has %d scheduled, want 1", qa, qi.Scheduled)
		}
	}
	for q, n := range want {
		if got[q] != n {
			t.Errorf("QueueInfos: %s pending %d, want %d", q, got[q], n)
		}
	}
	total := 0
	for addr, n := range perNode {
		total += n
		if n > 2 {
			t.Errorf("QueueInfos sent %d round trips to %s, want at most 2 (registry or layout, counts)", n, addr)
		}
	}
	// the registry and the partition layout are read in one pipeline, but
	// their keys (prefix:queues, prefix:layout) may live on two masters
	if total > len(cl.Nodes)+2 {
		t.Errorf("QueueInfos cost %d round trips (%v), want at most %d: one per master for the counts, the registry and the layout", total, perNode, len(cl.Nodes)+2)
	}
	t.Logf("QueueInfos of 3 queues, 8 partitions on 3 masters: round trips per node %v", perNode)
}
