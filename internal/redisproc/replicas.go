package redisproc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartClusterWithReplicas starts a Redis Cluster of masters master nodes
// (at least 3: electing a dead master's replica takes a majority of the
// masters, which the survivors of 1 or 2 are not), as [StartCluster] does,
// and gives each master one replica (CLUSTER REPLICATE), so killing a
// master promotes its replica after cluster-node-timeout (2 s). Replica i of [Cluster.Replicas] follows
// master i of [Cluster.Nodes] at the start; after a failover the roles
// change and [Cluster.MasterOf] tells who serves a slot. With [WithDir],
// replica i runs in the subdirectory "replica<i>". It returns once every
// replica has finished its first sync. On error no node is left running.
func StartClusterWithReplicas(masters int, opts ...Option) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redisproc: StartClusterWithReplicas needs at least 3 masters, got %d", masters)
	}
	c, err := StartCluster(masters, opts...)
	if err != nil {
		return nil, err
	}
	cfg := newConfig(opts)
	cfg.cluster = true
	for i := range masters {
		dir := ""
		if cfg.dir != "" {
			dir = filepath.Join(cfg.dir, "replica"+strconv.Itoa(i))
		}
		s, err := start(cfg, dir)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.Replicas = append(c.Replicas, s)
	}
	if err := c.attachReplicas(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// attachReplicas introduces each replica to the cluster, makes it follow
// its master and waits for the whole set to be healthy and in sync.
func (c *Cluster) attachReplicas() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	seed := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr})
	defer seed.Close()
	for _, r := range c.Replicas {
		if err := seed.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", r.Port, r.busPort).Err(); err != nil {
			return fmt.Errorf("redisproc: CLUSTER MEET %s: %w", r.Addr, err)
		}
	}
	for i, r := range c.Replicas {
		if err := replicate(ctx, r.Addr, c.Nodes[i].Addr); err != nil {
			return fmt.Errorf("redisproc: replica %s of %s: %w", r.Addr, c.Nodes[i].Addr, err)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("redisproc: waiting for replicas: %w", err)
	}
	return nil
}

// replicate makes the node at addr a replica of the node at master, once
// addr has learned master's ID by gossip.
func replicate(ctx context.Context, addr, master string) error {
	m := redis.NewClient(&redis.Options{Addr: master})
	defer m.Close()
	id, err := m.ClusterMyID(ctx).Result()
	if err != nil {
		return err
	}
	r := redis.NewClient(&redis.Options{Addr: addr})
	defer r.Close()
	for {
		err := r.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "Unknown node") {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CLUSTER REPLICATE %s: %w", id, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// All returns every node: the masters, then the replicas.
func (c *Cluster) All() []*Server {
	return append(append([]*Server{}, c.Nodes...), c.Replicas...)
}

// Running returns the nodes whose process is alive.
func (c *Cluster) Running() []*Server {
	var live []*Server
	for _, s := range c.All() {
		if s.Running() {
			live = append(live, s)
		}
	}
	return live
}

// WaitHealthy waits until every running node reports cluster_state:ok, the
// running nodes agree on who serves every slot, each slot's master is
// running and online, and every running replica's link to its master is up
// (its first sync done). Dead nodes may remain in the map as failed
// replicas, so it also serves after a failover.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	if ok, why := pollUntil(ctx, 50*time.Millisecond, func() (bool, string) { return c.healthy(ctx) }); !ok {
		return fmt.Errorf("cluster not healthy: %s", why)
	}
	return nil
}

// healthy checks the running nodes once; when not healthy it says why.
func (c *Cluster) healthy(ctx context.Context) (bool, string) {
	want := ""
	for _, s := range c.Running() {
		ok, why, got := nodeHealthy(ctx, s)
		if !ok {
			return false, why
		}
		if want == "" {
			want = got
		} else if got != want {
			return false, fmt.Sprintf("slot owners differ: %q vs %s: %q", want, s.Addr, got)
		}
	}
	return true, ""
}

// nodeHealthy checks one node and returns its view of the slot owners.
func nodeHealthy(ctx context.Context, s *Server) (bool, string, string) {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return false, fmt.Sprintf("%s: CLUSTER INFO: %v", s.Addr, err), ""
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return false, fmt.Sprintf("%s: cluster_state not ok", s.Addr), ""
	}
	repl, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return false, fmt.Sprintf("%s: INFO replication: %v", s.Addr, err), ""
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return false, fmt.Sprintf("%s: replica link not up", s.Addr), ""
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return false, fmt.Sprintf("%s: CLUSTER SHARDS: %v", s.Addr, err), ""
	}
	var owners []string
	for _, sh := range shards {
		if len(sh.Slots) == 0 {
			continue
		}
		master := ""
		for _, n := range sh.Nodes {
			if n.Role == "master" && n.Health == "online" {
				master = fmt.Sprintf("%s:%d", n.IP, n.Port)
			}
		}
		if master == "" {
			return false, fmt.Sprintf("%s: slots %d-... have no online master", s.Addr, sh.Slots[0].Start), ""
		}
		for _, r := range sh.Slots {
			owners = append(owners, fmt.Sprintf("%d-%d@%s", r.Start, r.End, master))
		}
	}
	return true, "", strings.Join(sortedCopy(owners), ",")
}

// MasterOf returns the running node that serves slot as master, asking the
// running nodes (CLUSTER SHARDS) until one names a master it knows.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (*Server, error) {
	var errs []error
	for _, s := range c.Running() {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		shards, err := rdb.ClusterShards(ctx).Result()
		_ = rdb.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m := c.masterIn(shards, slot); m != nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("redisproc: no running node names a master for slot %d: %w", slot, errors.Join(errs...))
}

// masterIn returns the online master that shards name for slot, or nil.
func (c *Cluster) masterIn(shards []redis.ClusterShard, slot int) *Server {
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot < int(r.Start) || slot > int(r.End) {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role != "master" || n.Health != "online" {
					continue
				}
				for _, s := range c.All() {
					if s.Port == int(n.Port) {
						return s
					}
				}
			}
		}
	}
	return nil
}

// ReplicaOf returns the running node that replicates master, or nil.
func (c *Cluster) ReplicaOf(ctx context.Context, master *Server) (*Server, error) {
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	defer rdb.Close()
	id, err := rdb.ClusterMyID(ctx).Result()
	if err != nil {
		return nil, err
	}
	for _, s := range c.Running() {
		r := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		info, err := r.Info(ctx, "replication").Result()
		_ = r.Close()
		if err == nil && strings.Contains(info, "role:slave") &&
			strings.Contains(info, "master_port:"+strconv.Itoa(master.Port)+"\r\n") {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redisproc: no running replica of %s (%s)", master.Addr, id)
}
