package logging

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// syncBuffer is a bytes.Buffer safe for go-redis's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRedisLines: go-redis's own lines (a failed dial, to a loopback
// port nothing listens on) go to the logger of a running worker
// (RedisTo) as warnings, throttled, and once it is released to
// slog.Default: never to go-redis's logger on stderr, which bypassed
// the configured one.
func TestRedisLines(t *testing.T) {
	var mine, def syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(old)

	release := RedisTo(slog.New(slog.NewTextHandler(&mine, nil)))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second,
		DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	for range 3 * Burst {
		_ = rdb.Ping(ctx).Err()
	}
	got := mine.String()
	lines := strings.Count(got, "from=go-redis")
	if lines == 0 || lines > Burst || !strings.Contains(got, "level=WARN") || !strings.Contains(got, "dial") {
		t.Fatalf("a running worker's logger got %d go-redis lines, want 1 to %d warnings about the dial:\n%s", lines, Burst, got)
	}
	release()
	other := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	defer other.Close()
	routed.c.mu.Lock()
	clear(routed.c.seen) // a new window, so the next line is written
	routed.c.mu.Unlock()
	_ = other.Ping(ctx).Err()
	if strings.Count(mine.String(), "from=go-redis") != lines || !strings.Contains(def.String(), "from=go-redis") {
		t.Fatalf("after release: worker's logger %q, default %q; want the line in the default only", mine.String(), def.String())
	}
}
