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

const (
	// SentinelMaster is the name the Sentinels of [StartSentinel] monitor.
	SentinelMaster = "shardq"
	sentinelFile   = "sentinel.conf"
	sentinelQuorum = 2
)

// Sentinel is a Redis set-up watched by Sentinel, started by
// [StartSentinel]: one master, one replica and three Sentinels. Call
// [Sentinel.Close] when done with it.
type Sentinel struct {
	// Data holds the master (Data[0] at the start) and its replica. After
	// a failover the roles swap; [Sentinel.Master] asks who is master.
	Data []*Server
	// Sentinels watch the master under the name [SentinelMaster], with a
	// quorum of 2 and down-after-milliseconds 1000.
	Sentinels []*Server
}

// StartSentinel starts a master, a replica of it and three Sentinels that
// monitor it (down after 1 s, so a killed master is replaced within a few
// seconds), each on its own free loopback port, with opts applied to the
// two data nodes. With [WithDir], the nodes run in the subdirectories
// "data<i>" and "sentinel<i>". It returns once the replica is in sync and
// every Sentinel knows the replica and the other Sentinels. On error
// nothing is left running.
func StartSentinel(opts ...Option) (*Sentinel, error) {
	cfg := newConfig(opts)
	st := &Sentinel{}
	for i := range 2 {
		c := *cfg
		c.dir = subdir(cfg.dir, "data", i)
		if i == 1 {
			c.extra = append(append([]string{}, c.extra...), "--replicaof", "127.0.0.1", strconv.Itoa(st.Data[0].Port))
		}
		s, err := start(&c, c.dir)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		st.Data = append(st.Data, s)
	}
	for i := range 3 {
		c := &config{sentinelConf: sentinelConf(st.Data[0].Port)}
		s, err := start(c, subdir(cfg.dir, "sentinel", i))
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		st.Sentinels = append(st.Sentinels, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := st.WaitReady(ctx); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("redisproc: waiting for Sentinel: %w", err)
	}
	return st, nil
}

// subdir returns base/<name><i>, or "" (a temporary directory) when base is "".
func subdir(base, name string, i int) string {
	if base == "" {
		return ""
	}
	return filepath.Join(base, name+strconv.Itoa(i))
}

// sentinelConf is a Sentinel's config file for a master on port.
func sentinelConf(port int) string {
	return fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 10000\n"+
		"sentinel parallel-syncs %[1]s 1\n", SentinelMaster, port, sentinelQuorum)
}

// SentinelAddrs returns the Sentinels' addresses, as go-redis's
// FailoverOptions.SentinelAddrs wants them.
func (st *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(st.Sentinels))
	for i, s := range st.Sentinels {
		addrs[i] = s.Addr
	}
	return addrs
}

// URL returns a redis+sentinel:// URL for the set-up, as
// queue.NewRedisClient takes it.
func (st *Sentinel) URL() string {
	addrs := st.SentinelAddrs()
	u := "redis+sentinel://" + addrs[0] + "?master_name=" + SentinelMaster
	for _, a := range addrs[1:] {
		u += "&addr=" + a
	}
	return u
}

// Master returns the data node the Sentinels name as master now.
func (st *Sentinel) Master(ctx context.Context) (*Server, error) {
	var last error
	for _, s := range st.Sentinels {
		if !s.Running() {
			continue
		}
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err != nil {
			last = err
			continue
		}
		for _, d := range st.Data {
			if d.Addr == strings.Join(addr, ":") {
				return d, nil
			}
		}
		last = fmt.Errorf("master %v is not one of ours", addr)
	}
	return nil, fmt.Errorf("redisproc: no Sentinel names the master: %v", last)
}

// WaitReady waits until every running Sentinel names the same running
// master, knows 2 other Sentinels, and that master has a replica in sync.
func (st *Sentinel) WaitReady(ctx context.Context) error {
	if ok, why := pollUntil(ctx, 100*time.Millisecond, func() (bool, string) { return st.ready(ctx) }); !ok {
		return fmt.Errorf("not ready: %s", why)
	}
	return nil
}

// ready checks the set-up once; when not ready it says why.
func (st *Sentinel) ready(ctx context.Context) (bool, string) {
	master := ""
	for _, s := range st.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		m, err := sc.Master(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err != nil {
			return false, fmt.Sprintf("sentinel %s: %v", s.Addr, err)
		}
		addr := m["ip"] + ":" + m["port"]
		if master == "" {
			master = addr
		} else if addr != master {
			return false, fmt.Sprintf("sentinels disagree: %s vs %s", master, addr)
		}
		if m["num-other-sentinels"] != "2" || m["num-slaves"] == "0" || strings.Contains(m["flags"], "down") {
			return false, fmt.Sprintf("sentinel %s: master %s flags %s, %s replicas, %s other sentinels",
				s.Addr, addr, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: master, MaxRetries: -1})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return false, fmt.Sprintf("master %s: %v", master, err)
	}
	if !strings.Contains(info, "role:master") || !strings.Contains(info, "state=online") {
		return false, fmt.Sprintf("master %s: no replica online", master)
	}
	return true, ""
}

// Close closes every node and Sentinel (see [Server.Close]).
func (st *Sentinel) Close() error {
	var errs []error
	for _, s := range append(append([]*Server{}, st.Sentinels...), st.Data...) {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
