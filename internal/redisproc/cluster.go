package redisproc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	clusterSlots   = 16384
	clusterTimeout = 30 * time.Second
)

// Cluster is a Redis Cluster of master nodes started by [StartCluster].
// Call [Cluster.Close] when done with it.
type Cluster struct {
	// Nodes are the masters; node i serves the i-th equal share of the
	// 16384 slots at the start.
	Nodes []*Server
	// Replicas are the replicas of [StartClusterWithReplicas]: replica i
	// follows master i at the start. Empty for [StartCluster].
	Replicas []*Server
}

// StartCluster starts n (at least 1) redis-server nodes in cluster mode,
// each with its own port, cluster bus port and directory (holding
// nodes.conf), and the given options; with [WithDir], node i runs in the
// subdirectory "node<i>". It assigns the slots evenly (one node owns all
// 16384), joins the nodes with CLUSTER MEET (no replicas; redis-cli is not
// used), and waits until every node reports cluster_state:ok and all nodes
// agree on the slot map (CLUSTER SHARDS). A cluster of one or two masters
// serves as well as a larger one but cannot fail over (see
// [StartClusterWithReplicas]); it is the baseline for scaling measurements.
//
// If redis-server is not in PATH, the error is [ErrNotInstalled]. On error
// no node is left running.
func StartCluster(n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redisproc: StartCluster needs at least 1 node, got %d", n)
	}
	cfg := newConfig(opts)
	cfg.cluster = true
	c := &Cluster{}
	for i := range n {
		dir := ""
		if cfg.dir != "" {
			dir = filepath.Join(cfg.dir, "node"+strconv.Itoa(i))
		}
		s, err := start(cfg, dir)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	if err := c.create(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// create joins the started nodes into a cluster and waits until it is
// ready.
func (c *Cluster) create() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	clients := make([]*redis.Client, len(c.Nodes))
	for i, s := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr})
		defer clients[i].Close()
	}
	if err := c.join(ctx, clients); err != nil {
		return fmt.Errorf("redisproc: creating cluster: %w", err)
	}
	if err := waitClusterReady(ctx, clients); err != nil {
		return fmt.Errorf("redisproc: waiting for cluster: %w", err)
	}
	return nil
}

// join gives each node its config epoch and slot range, then introduces
// every node to the first one; gossip does the rest.
func (c *Cluster) join(ctx context.Context, clients []*redis.Client) error {
	n := len(clients)
	for i, rdb := range clients {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := rdb.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER SET-CONFIG-EPOCH: %w", c.Nodes[i].Addr, err)
		}
		if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER ADDSLOTSRANGE %d %d: %w", c.Nodes[i].Addr, lo, hi, err)
		}
	}
	for _, s := range c.Nodes[1:] {
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port, s.busPort).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", s.Addr, err)
		}
	}
	return nil
}

// waitClusterReady polls until every node knows all nodes, reports
// cluster_state:ok, and returns the same CLUSTER SHARDS map.
func waitClusterReady(ctx context.Context, clients []*redis.Client) error {
	if ok, why := pollUntil(ctx, 50*time.Millisecond, func() (bool, string) { return clusterReady(ctx, clients) }); !ok {
		return fmt.Errorf("not ready after %v: %s", clusterTimeout, why)
	}
	return nil
}

// pollUntil calls check every interval until it holds (true) or ctx ends
// (false, with check's last word on why not).
func pollUntil(ctx context.Context, interval time.Duration, check func() (bool, string)) (bool, string) {
	for {
		ok, why := check()
		if ok {
			return true, ""
		}
		select {
		case <-ctx.Done():
			return false, why
		case <-time.After(interval):
		}
	}
}

// clusterReady checks all nodes once; when not ready it says why.
func clusterReady(ctx context.Context, clients []*redis.Client) (bool, string) {
	want := ""
	for i, rdb := range clients {
		addr := rdb.Options().Addr
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER INFO: %v", addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") ||
			!strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r\n", len(clients))) {
			return false, fmt.Sprintf("%s: CLUSTER INFO:\n%s", addr, info)
		}
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil {
			return false, fmt.Sprintf("%s: CLUSTER SHARDS: %v", addr, err)
		}
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				if n.Health != "online" {
					return false, fmt.Sprintf("%s: node %s:%d is %s", addr, n.IP, n.Port, n.Health)
				}
			}
		}
		got := slotMap(shards)
		if i == 0 {
			want = got
		} else if got != want {
			return false, fmt.Sprintf("slot maps differ: %s has %q, %s has %q",
				clients[0].Options().Addr, want, addr, got)
		}
	}
	return true, ""
}

// slotMap renders CLUSTER SHARDS canonically: one sorted line per shard
// with its slot ranges and its nodes' IDs, addresses, roles and health.
func slotMap(shards []redis.ClusterShard) string {
	lines := make([]string, 0, len(shards))
	for _, sh := range shards {
		var b strings.Builder
		for _, r := range sh.Slots {
			fmt.Fprintf(&b, "%d-%d,", r.Start, r.End)
		}
		for _, n := range sh.Nodes {
			fmt.Fprintf(&b, " %s@%s:%d/%s/%s", n.ID, n.IP, n.Port, n.Role, n.Health)
		}
		lines = append(lines, b.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// sortedCopy returns a sorted copy of ss.
func sortedCopy(ss []string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	return out
}

// Addrs returns the nodes' addresses ("127.0.0.1:port"): the masters,
// then the replicas, as seeds for a cluster client.
func (c *Cluster) Addrs() []string {
	all := c.All()
	addrs := make([]string, len(all))
	for i, s := range all {
		addrs[i] = s.Addr
	}
	return addrs
}

// Close closes every node (see [Server.Close]) and returns their errors
// joined. Like Server.Close it is idempotent.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.All() {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
