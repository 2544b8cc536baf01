package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// Cluster is a Redis Cluster of master nodes owned by a test.
type Cluster struct {
	// Nodes are the masters; node i serves the i-th equal share of the
	// 16384 slots at the start.
	Nodes []*Server
	// Replicas are the replicas of [StartClusterWithReplicas]: replica i
	// follows master i at the start.
	Replicas []*Server

	proc *redisproc.Cluster
}

// StartCluster starts n (at least 3) redis-server nodes in cluster mode, each
// with its own port, cluster bus port and directory (holding nodes.conf), and
// the given options. It assigns the slots evenly, joins the nodes with
// CLUSTER MEET (no replicas; redis-cli is not used), and waits until every
// node reports cluster_state:ok and all nodes agree on the slot map (CLUSTER SHARDS). All
// nodes are killed in t.Cleanup. See [redisproc.StartCluster].
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("redistest: StartCluster needs at least 3 nodes, got %d", n)
	}
	// TempDir first, so its removal runs after the Close registered below.
	pc, err := redisproc.StartCluster(n, procOptions(t.TempDir(), opts)...)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return wrapCluster(pc)
}

// Addrs returns the nodes' addresses ("127.0.0.1:port"): masters, then
// replicas.
func (c *Cluster) Addrs() []string { return c.proc.Addrs() }

// Client returns a new go-redis cluster client seeded with all nodes, closed
// in t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
