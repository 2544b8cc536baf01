package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	neturl "net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// redisFlag is the --redis URL flag's help.
const redisFlagHelp = "Redis URL (default $SHARDQ_REDIS_URL, then $REDIS_URL)"

// connect returns a client for url, else $SHARDQ_REDIS_URL or $REDIS_URL.
// With none of them and private set, it starts a private redis-server on a
// free port, which the returned close function stops.
func (m *Main) connect(ctx context.Context, url string, private bool, log io.Writer) (redis.UniversalClient, func(), error) {
	url = cmp.Or(url, m.Getenv("SHARDQ_REDIS_URL"), m.Getenv("REDIS_URL"))
	if url == "" && !private {
		return nil, nil, fmt.Errorf("%w: no Redis: pass --redis redis://host:port or set SHARDQ_REDIS_URL (or REDIS_URL)", errUsage)
	}
	var srv *redisproc.Server
	if url == "" {
		var err error
		if srv, err = redisproc.Start(); err != nil {
			return nil, nil, fmt.Errorf("start a private redis-server: %w", err)
		}
		url = srv.URL()
		fmt.Fprintf(log, "started a private redis-server at %s (stopped on exit)\n", srv.Addr)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		if srv != nil {
			_ = srv.Close()
		}
		return nil, nil, fmt.Errorf("%w: --redis %q: %v", errUsage, redactURL(url), err)
	}
	// shardq's own commands retry what is safe to retry themselves; a
	// silent resend of a pop or an enqueue by go-redis is not.
	if !strings.Contains(url, "max_retries") {
		opts.MaxRetries = -1
	}
	// Let go-redis stop reads and writes at a context's deadline, so shardq
	// need not watch each call from a second goroutine (see internal/rcall).
	opts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opts)
	closeAll := func() {
		_ = rdb.Close()
		if srv != nil {
			_ = srv.Close()
		}
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("connect to %s: %w", opts.Addr, err)
	}
	return rdb, closeAll, nil
}

// redactURL hides the password of a Redis URL, for messages: "xxxxx".
func redactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
