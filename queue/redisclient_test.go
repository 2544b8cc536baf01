package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
)

// TestNewRedisClient: one constructor, by URL scheme, for a single server,
// Redis Cluster and Sentinel, each configured as shardq needs (no resend
// after a lost reply, context deadlines honoured) and each carrying a real
// enqueue and read.
//
// (go-redis stores MaxRetries -1, "no resend", as 0 once the client is
// made; its default would be 3.)
func TestNewRedisClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	roundTrip := func(t *testing.T, rdb redis.UniversalClient) {
		t.Helper()
		t.Cleanup(func() { rdb.Close() })
		cfg := Config{Prefix: redistest.Prefix(t)}
		client, err := NewClient(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		info, err := client.Enqueue(ctx, NewRawTask("t", []byte("hello")))
		if err != nil {
			t.Fatal(err)
		}
		insp, err := NewInspector(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ti, err := insp.GetTask(ctx, DefaultQueue, info.ID)
		if err != nil || string(ti.Payload) != "hello" {
			t.Fatalf("GetTask: %+v, %v", ti, err)
		}
	}

	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		rdb, err := NewRedisClient("redis://" + srv.Addr + "/0?dial_timeout=2s")
		if err != nil {
			t.Fatal(err)
		}
		c, ok := rdb.(*redis.Client)
		if !ok || c.Options().MaxRetries != 0 || !c.Options().ContextTimeoutEnabled || c.Options().DialTimeout != 2*time.Second {
			t.Fatalf("client %T: MaxRetries %d, ContextTimeoutEnabled %v", rdb, c.Options().MaxRetries, c.Options().ContextTimeoutEnabled)
		}
		roundTrip(t, rdb)
		// a max_retries of the caller's own is kept
		rdb2, err := NewRedisClient("redis://" + srv.Addr + "?max_retries=2")
		if err != nil || rdb2.(*redis.Client).Options().MaxRetries != 2 {
			t.Fatalf("max_retries=2: %v", err)
		}
		rdb2.Close()
		// options in, the same settings
		rdb3 := NewRedisClientFromOptions(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
		if o := rdb3.(*redis.Client).Options(); o.MaxRetries != 0 || !o.ContextTimeoutEnabled {
			t.Fatalf("from options: retries %d", o.MaxRetries)
		}
		roundTrip(t, rdb3)
	})

	t.Run("Unix", func(t *testing.T) {
		t.Parallel()
		rdb, err := NewRedisClient("unix:///run/redis/redis.sock?db=2")
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		if o := rdb.(*redis.Client).Options(); o.Network != "unix" || o.Addr != "/run/redis/redis.sock" || o.DB != 2 || o.MaxRetries != 0 {
			t.Fatalf("unix: %s %s db %d retries %d", o.Network, o.Addr, o.DB, o.MaxRetries)
		}
	})

	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t, 3)
		addrs := c.Addrs()
		rdb, err := NewRedisClient("redis+cluster://" + addrs[0] + "?addr=" + addrs[1])
		if err != nil {
			t.Fatal(err)
		}
		cc, ok := rdb.(*redis.ClusterClient)
		if !ok || cc.Options().MaxRetries > 0 || !cc.Options().ContextTimeoutEnabled || len(cc.Options().Addrs) != 2 {
			t.Fatalf("client %T: retries %d, context timeouts %v, addrs %v", rdb, cc.Options().MaxRetries, cc.Options().ContextTimeoutEnabled, cc.Options().Addrs)
		}
		roundTrip(t, rdb)
	})

	t.Run("Sentinel", func(t *testing.T) {
		t.Parallel()
		master := redistest.Start(t)
		sentinel := startSentinel(t, master.Addr)
		rdb, err := NewRedisClient("redis+sentinel://" + sentinel + "?master_name=mymaster")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := rdb.(*redis.Client); !ok { // a failover client is a *redis.Client
			t.Fatalf("client %T", rdb)
		}
		roundTrip(t, rdb)
		// it reached the master Sentinel named
		if n := master.Client(t).DBSize(ctx).Val(); n == 0 {
			t.Fatal("the master holds no key after the enqueue")
		}
	})

	t.Run("BadURLs", func(t *testing.T) {
		t.Parallel()
		for _, u := range []string{
			"http://127.0.0.1:6379",
			"redis+sentinel://127.0.0.1:26379",
			"unix+cluster:///tmp/x.sock",
			"redis://user:s3cret@127.0.0.1:6379?bogus_option=1",
			"redis://:s3cret@[::1",
			// every form, its secrets where each may go, and a fault that
			// makes it refused: a bad %-escape, an unknown option, a bad value
			"redis://u:s3cret%zz@127.0.0.1:6379",
			"redis://u:s3c/ret@127.0.0.1:6379",
			"rediss://u:s3cret@127.0.0.1:6379/x",
			"unix://u:s3cret@/tmp/x.sock?db=s3cret",
			"unix:///tmp/x.sock?password=s3cret&bogus=1",
			"redis+cluster://u:s3cret@127.0.0.1:7000?addr=s3cret",
			"rediss+cluster://u:s3cret@127.0.0.1:7000?bogus=1",
			"redis+sentinel://127.0.0.1:26379?password=s3cret",
			"redis+sentinel://127.0.0.1:26379?master_name=m&password=s3cret&bogus=1",
			"rediss+sentinel://u:s3cret@127.0.0.1:26379?master_name=m&password=s3cret&dial_timeout=s3cret",
			"redis+sentinel://127.0.0.1:26379?master_name=m&sentinel_password=s3cret&db=x",
		} {
			rdb, err := NewRedisClient(u)
			if err == nil {
				rdb.Close()
				t.Errorf("%q: no error", u)
				continue
			}
			if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%q: %v; want ErrInvalid without the password", u, err)
			}
		}
	})
}

// startSentinel starts a redis-sentinel on a free loopback port that
// monitors master as "mymaster", and returns its address.
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(master)
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, sport, _ := net.SplitHostPort(addr)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\n", sport, dir, host, port)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("redis-server", conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if a, err := s.GetMasterAddrByName(context.Background(), "mymaster").Result(); err == nil && len(a) == 2 {
				s.Close()
				return addr
			}
		}
		s.Close()
		_ = cmd.Process.Kill()
	}
	t.Fatal("no sentinel came up")
	return ""
}
