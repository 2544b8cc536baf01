package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// router is go-redis's logger once RouteRedis ran. go-redis has one
// logger per process (redis.SetLogger), which printed its own lines to
// stderr past the logger shardq was given: a line per failed dial during
// an outage.
type router struct {
	c *counts

	mu   sync.Mutex
	next int
	to   []target // running servers' loggers, newest last
}

type target struct {
	id int
	l  *slog.Logger
}

var (
	routed     router
	routedOnce sync.Once
)

// RouteRedis makes go-redis's log lines, process-wide, Warn lines of
// slog.Default(), throttled by their format (Window, Burst), or of the
// newest logger given to RedisTo and not yet released. A program that
// calls redis.SetLogger afterwards keeps its own.
func RouteRedis() {
	routedOnce.Do(func() {
		routed.c = &counts{window: Window, burst: Burst, now: time.Now, seen: map[string]*count{}}
		redis.SetLogger(&routed)
	})
}

// RedisTo routes go-redis's lines to l (RouteRedis) until release is
// called: a worker's logger, while it runs. A logger is never written to
// after its release, so a test's logger is not used after its test.
func RedisTo(l *slog.Logger) (release func()) {
	RouteRedis()
	routed.mu.Lock()
	defer routed.mu.Unlock()
	routed.next++
	id := routed.next
	routed.to = append(routed.to, target{id: id, l: l})
	return func() {
		routed.mu.Lock()
		defer routed.mu.Unlock()
		for i, t := range routed.to {
			if t.id == id {
				routed.to = append(routed.to[:i], routed.to[i+1:]...)
				return
			}
		}
	}
}

// Printf is go-redis's logging call.
func (r *router) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	dropped, ok := r.c.allow(format)
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("from", "go-redis")}
	if dropped > 0 {
		attrs = append(attrs, slog.Int("repeated", dropped))
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	r.logger().LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}

func (r *router) logger() *slog.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.to); n > 0 {
		return r.to[n-1].l
	}
	return slog.Default()
}
