package redisproc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// start starts a server closed in t.Cleanup.
func start(t *testing.T, opts ...redisproc.Option) *redisproc.Server {
	t.Helper()
	s, err := redisproc.Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// client returns a go-redis client to s, closed in t.Cleanup.
func client(t *testing.T, s *redisproc.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestStartClose(t *testing.T) {
	t.Parallel()
	s, err := redisproc.Start()
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != fmt.Sprintf("127.0.0.1:%d", s.Port) || s.Port == 0 || !filepath.IsAbs(s.Dir) {
		t.Fatalf("bad server fields: %+v", s)
	}
	if want := fmt.Sprintf("redis://127.0.0.1:%d/0", s.Port); s.URL() != want {
		t.Fatalf("URL() = %q, want %q", s.URL(), want)
	}
	opts, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", s.URL(), err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	// Persistence is off by default.
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatalf("CONFIG GET: %v", err)
	}
	for k, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1", "dir": s.Dir} {
		if cfg[k] != want {
			t.Errorf("config %s = %q, want %q", k, cfg[k], want)
		}
	}
	if !s.Running() {
		t.Fatal("Running() = false for a live server")
	}
	if tail := s.LogTail(); !strings.Contains(tail, "--- redis.log (tail) ---") {
		t.Errorf("LogTail() = %q, want the redis.log tail", tail)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s.Running() {
		t.Fatal("Running() = true after Close")
	}
	if exists(s.Dir) {
		t.Fatalf("Close left the temporary directory %s", s.Dir)
	}
	if conn, err := net.Dial("tcp", s.Addr); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Close", s.Addr)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, f := range map[string]func() error{"Kill": s.Kill, "Stop": s.Stop, "Pause": s.Pause, "Resume": s.Resume} {
		if err := f(); err != nil {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
	if s.Running() {
		t.Fatal("Running() = true after Restart following Close")
	}
}

func TestWithDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b") // missing: Start creates it
	s := start(t, redisproc.WithDir(dir))
	if s.Dir != dir {
		t.Fatalf("Dir = %q, want %q", s.Dir, dir)
	}
	got, err := client(t, s).ConfigGet(context.Background(), "dir").Result()
	if err != nil || got["dir"] != dir {
		t.Fatalf("config dir = %v, %v; want %q", got, err, dir)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !exists(filepath.Join(dir, "redis.log")) {
		t.Fatalf("Close removed %s given with WithDir", dir)
	}
}

func TestWithDirRelative(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base) // not parallel: changes the working directory
	s := start(t, redisproc.WithDir("data"))
	if !filepath.IsAbs(s.Dir) {
		t.Fatalf("Dir = %q, want an absolute path", s.Dir)
	}
	a, errA := os.Stat(s.Dir)
	b, errB := os.Stat(filepath.Join(base, "data"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("Dir = %q, want %s/data (%v, %v)", s.Dir, base, errA, errB)
	}
	if !exists(filepath.Join(base, "data", "redis.log")) {
		t.Fatalf("no redis.log in %s/data", base)
	}
}

func TestErrNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // not parallel: changes the environment
	want := "redisproc: redis-server not found in PATH; install it with: apt-get install -y redis-server"
	if got := redisproc.ErrNotInstalled.Error(); got != want {
		t.Fatalf("ErrNotInstalled = %q, want %q", got, want)
	}
	s, err := redisproc.Start()
	if s != nil || !errors.Is(err, redisproc.ErrNotInstalled) || err.Error() != want {
		t.Fatalf("Start() = %v, %v; want nil, ErrNotInstalled", s, err)
	}
	c, err := redisproc.StartCluster(3)
	if c != nil || !errors.Is(err, redisproc.ErrNotInstalled) {
		t.Fatalf("StartCluster(3) = %v, %v; want nil, ErrNotInstalled", c, err)
	}
}

func TestStartFailure(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // not parallel: changes the environment
	s, err := redisproc.Start(redisproc.WithArgs("--no-such-directive", "x"))
	if s != nil || err == nil {
		t.Fatalf("Start with a bad argument = %v, %v; want an error", s, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "redisproc: starting redis-server on 127.0.0.1:") ||
		!strings.Contains(msg, "no-such-directive") {
		t.Fatalf("error %q lacks the address or the server's complaint", msg)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("failed Start left %v in TMPDIR", left)
	}
}

func TestAOFSurvivesKillRestart(t *testing.T) {
	t.Parallel()
	s := start(t, redisproc.WithAOF())
	ctx := context.Background()
	if err := client(t, s).Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	port, dir := s.Port, s.Dir
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if s.Running() {
		t.Fatal("Running() = true after Kill")
	}
	if err := s.Kill(); err != nil { // no-op
		t.Fatalf("second Kill: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Port != port || s.Dir != dir {
		t.Fatalf("Restart moved the server: port %d->%d dir %q->%q", port, s.Port, dir, s.Dir)
	}
	got, err := client(t, s).Get(ctx, "k").Result()
	if err != nil || got != "kept" {
		t.Fatalf("GET after restart = %q, %v; want \"kept\"", got, err)
	}
}

func TestNoAOFLosesDataOnKillRestart(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx := context.Background()
	if err := client(t, s).Set(ctx, "k", "lost", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	err := client(t, s).Get(ctx, "k").Err()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after restart: err = %v, want redis.Nil", err)
	}
}

func TestMaxMemoryOOM(t *testing.T) {
	t.Parallel()
	s := start(t, redisproc.WithMaxMemory(2<<20))
	rdb := client(t, s)
	ctx := context.Background()
	big := strings.Repeat("x", 512<<10)
	var err error
	for i := 0; i < 64 && err == nil; i++ { // at most 32 MiB
		err = rdb.Set(ctx, strings.Repeat("k", i+1), big, 0).Err()
	}
	if err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET beyond maxmemory: err = %v, want an OOM error", err)
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := start(t, redisproc.WithMaxMemory(1<<30),
		redisproc.WithArgs("--maxmemory-policy", "allkeys-lru"))
	got, err := client(t, s).ConfigGet(context.Background(), "maxmemory-policy").Result()
	if err != nil || got["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("maxmemory-policy = %v, %v; want allkeys-lru", got, err)
	}
}

func TestPauseStopRestart(t *testing.T) {
	t.Parallel()
	s := start(t)
	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if !s.Running() {
		t.Fatal("Running() = false for a paused server")
	}
	if err := s.Stop(); err != nil { // Stop works on a paused server
		t.Fatalf("Stop: %v", err)
	}
	if s.Running() {
		t.Fatal("Running() = true after Stop")
	}
	if err := s.Stop(); err != nil { // no-op
		t.Fatalf("second Stop: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := s.Restart(); err != nil { // stops the running server first
		t.Fatalf("Restart of a running server: %v", err)
	}
	if err := client(t, s).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
}

func TestCloseRacesRestart(t *testing.T) {
	t.Parallel()
	s, err := redisproc.Start()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for s.Restart() == nil {
		}
	})
	for range 3 {
		wg.Go(func() { _ = s.Close() })
	}
	wg.Wait()
	if s.Running() {
		_ = s.Kill()
		t.Fatal("Running() = true after Close")
	}
}
