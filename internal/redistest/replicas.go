package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// healthyWait bounds how long a test waits for a cluster or Sentinel
// set-up to settle after a failure.
const healthyWait = 60 * time.Second

// StartClusterWithReplicas starts a Redis Cluster of masters (at least 3)
// masters with one replica each (cluster-node-timeout 2 s), all killed in
// t.Cleanup. See [redisproc.StartClusterWithReplicas].
func StartClusterWithReplicas(t testing.TB, masters int, opts ...Option) *Cluster {
	t.Helper()
	pc, err := redisproc.StartClusterWithReplicas(masters, procOptions(t.TempDir(), opts)...)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return wrapCluster(pc)
}

// wrapCluster returns the test view of pc.
func wrapCluster(pc *redisproc.Cluster) *Cluster {
	c := &Cluster{proc: pc}
	for _, p := range pc.Nodes {
		c.Nodes = append(c.Nodes, wrap(p))
	}
	for _, p := range pc.Replicas {
		c.Replicas = append(c.Replicas, wrap(p))
	}
	return c
}

// find returns the test view of p.
func (c *Cluster) find(p *redisproc.Server) *Server {
	for _, s := range c.All() {
		if s.proc == p {
			return s
		}
	}
	return nil
}

// All returns every node: the masters, then the replicas.
func (c *Cluster) All() []*Server {
	return append(append([]*Server{}, c.Nodes...), c.Replicas...)
}

// WaitHealthy waits (up to a minute) until every running node reports the
// cluster ok, agrees on the slots' masters, and every running replica is in
// sync; it fails the test otherwise. See [redisproc.Cluster.WaitHealthy].
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), healthyWait)
	defer cancel()
	if err := c.proc.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// MasterOf returns the node serving slot as master now.
func (c *Cluster) MasterOf(t testing.TB, slot int) *Server {
	t.Helper()
	p, err := c.proc.MasterOf(context.Background(), slot)
	if err != nil {
		t.Fatal(err)
	}
	return c.find(p)
}

// ReplicaOf returns the running replica of master.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	p, err := c.proc.ReplicaOf(context.Background(), master.proc)
	if err != nil {
		t.Fatal(err)
	}
	return c.find(p)
}

// Slot returns the cluster slot of key (CRC16 of its hash tag), asked of a
// running node.
func (c *Cluster) Slot(t testing.TB, key string) int {
	t.Helper()
	for _, s := range c.All() {
		if !s.Running() {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		n, err := rdb.ClusterKeySlot(context.Background(), key).Result()
		_ = rdb.Close()
		if err == nil {
			return int(n)
		}
	}
	t.Fatalf("redistest: no running node answers CLUSTER KEYSLOT %q", key)
	return 0
}

// MigrateSlot moves slot from the master from to the master to while
// clients run, batch keys per MIGRATE with pause between batches. See
// [redisproc.Cluster.MigrateSlot].
func (c *Cluster) MigrateSlot(t testing.TB, slot int, from, to *Server, batch int, pause time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), healthyWait)
	defer cancel()
	if err := c.proc.MigrateSlot(ctx, slot, from.proc, to.proc, batch, pause); err != nil {
		t.Fatal(err)
	}
}

// Sentinel is a master, a replica and three Sentinels owned by a test.
type Sentinel struct {
	// Data holds the master (Data[0] at the start) and its replica.
	Data []*Server
	// Sentinels watch the master under [redisproc.SentinelMaster].
	Sentinels []*Server

	proc *redisproc.Sentinel
}

// StartSentinel starts a master, its replica and three Sentinels, all
// killed in t.Cleanup. See [redisproc.StartSentinel].
func StartSentinel(t testing.TB, opts ...Option) *Sentinel {
	t.Helper()
	ps, err := redisproc.StartSentinel(procOptions(t.TempDir(), opts)...)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	st := &Sentinel{proc: ps}
	for _, p := range ps.Data {
		st.Data = append(st.Data, wrap(p))
	}
	for _, p := range ps.Sentinels {
		st.Sentinels = append(st.Sentinels, wrap(p))
	}
	return st
}

// URL returns the redis+sentinel:// URL queue.NewRedisClient takes.
func (st *Sentinel) URL() string { return st.proc.URL() }

// Master returns the data node the Sentinels name as master now.
func (st *Sentinel) Master(t testing.TB) *Server {
	t.Helper()
	p, err := st.proc.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Data {
		if s.proc == p {
			return s
		}
	}
	t.Fatalf("redistest: master %s is not a data node", p.Addr)
	return nil
}

// WaitReady waits (up to a minute) until the Sentinels agree on a running
// master that has a replica in sync.
func (st *Sentinel) WaitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), healthyWait)
	defer cancel()
	if err := st.proc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}
