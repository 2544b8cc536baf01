package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
)

func TestStartPing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") || srv.Port == 0 || srv.Dir == "" {
		t.Fatalf("bad server fields: %+v", srv)
	}
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	// Persistence is off by default.
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatalf("CONFIG GET: %v", err)
	}
	for k, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1", "dir": srv.Dir} {
		if cfg[k] != want {
			t.Errorf("config %s = %q, want %q", k, cfg[k], want)
		}
	}
	if !srv.Running() {
		t.Fatal("Running() = false for a live server")
	}
}

func TestKillStopIdempotent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill(t)
	if srv.Running() {
		t.Fatal("Running() = true after Kill")
	}
	srv.Kill(t) // no-op
	srv.Stop(t) // no-op
	srv.Restart(t)
	srv.Stop(t)
	if srv.Running() {
		t.Fatal("Running() = true after Stop")
	}
	// Cleanup must not fail on a stopped server.
}

func TestAOFSurvivesKillRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.WithAOF())
	ctx := context.Background()
	key := redistest.Prefix(t) + ":k"
	if err := srv.Client(t).Set(ctx, key, "kept", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	port, dir := srv.Port, srv.Dir
	srv.Kill(t)
	srv.Restart(t)
	if srv.Port != port || srv.Dir != dir {
		t.Fatalf("Restart moved the server: port %d->%d dir %q->%q", port, srv.Port, dir, srv.Dir)
	}
	got, err := srv.Client(t).Get(ctx, key).Result()
	if err != nil || got != "kept" {
		t.Fatalf("GET after restart = %q, %v; want \"kept\"", got, err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	opts := srv.Options()
	opts.ReadTimeout = 200 * time.Millisecond
	opts.WriteTimeout = 200 * time.Millisecond
	opts.MaxRetries = -1
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	key := redistest.Prefix(t) + ":k"
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	srv.Pause(t)
	start := time.Now()
	err := rdb.Get(ctx, key).Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET on paused server: err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("GET on paused server took %v", d)
	}
	if !srv.Running() {
		t.Fatal("Running() = false for a paused server")
	}

	srv.Resume(t)
	if got, err := rdb.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want \"v\"", got, err)
	}
}

// fatalTB records the message of the first Fatal and ends the calling
// goroutine, like testing.T, so Start's failure message can be checked.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

func TestStartWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // not parallel: changes the environment
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.Start(f)
	}()
	<-done
	want := "redistest: redis-server not found in PATH; install it with: apt-get install -y redis-server"
	if f.msg != want {
		t.Fatalf("Start without redis-server failed with %q, want %q", f.msg, want)
	}
}
