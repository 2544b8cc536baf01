package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redact"
	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

// redisFlag is the --redis URL flag's help.
const redisFlagHelp = "Redis URL (default $SHARDQ_REDIS_URL, then $REDIS_URL)"

// errNoRedis is the usage error of a command that needs a Redis URL and
// has none.
var errNoRedis = fmt.Errorf("%w: no Redis: pass --redis redis://host:port or set SHARDQ_REDIS_URL (or REDIS_URL)", errUsage)

// effectiveURL is the Redis URL a command runs against, its password
// hidden, for messages: the flag, the environment, or the private server
// connect started.
func (m *Main) effectiveURL(flagURL string, rdb redis.UniversalClient) string {
	if url := cmp.Or(flagURL, m.Getenv("SHARDQ_REDIS_URL"), m.Getenv("REDIS_URL")); url != "" {
		return redact.URL(url)
	}
	if c, ok := rdb.(*redis.Client); ok {
		return "redis://" + c.Options().Addr
	}
	return ""
}

// connect returns a client for url, else $SHARDQ_REDIS_URL or $REDIS_URL.
// With none of them and private set, it starts a private redis-server on a
// free port, which the returned close function stops.
func (m *Main) connect(ctx context.Context, url string, private bool, log io.Writer) (redis.UniversalClient, func(), error) {
	url = cmp.Or(url, m.Getenv("SHARDQ_REDIS_URL"), m.Getenv("REDIS_URL"))
	if url == "" && !private {
		return nil, nil, errNoRedis
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
	// queue.NewRedisClient: one server, redis+cluster:// or
	// redis+sentinel://, without go-redis's resends (shardq's commands
	// retry what is safe to retry themselves) and with context deadlines
	// honoured (see internal/rcall)
	rdb, err := queue.NewRedisClient(url)
	var addr string
	var tls bool
	if err == nil {
		addr, tls = clientAddr(rdb)
		err = checkPort(addr)
		if err != nil {
			_ = rdb.Close()
		}
	}
	if err != nil {
		if srv != nil {
			_ = srv.Close()
		}
		return nil, nil, fmt.Errorf("%w: --redis %q: %v", errUsage, redact.URL(url), err)
	}
	closeAll := func() {
		_ = rdb.Close()
		if srv != nil {
			_ = srv.Close()
		}
	}
	// A server that accepts the connection but never answers (TLS asked
	// of a plain port, or the reverse) would hold the first call through
	// every dial retry; a first answer is due well within connectTimeout.
	wait := cmp.Or(m.connectTimeout, connectTimeout)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		closeAll()
		hint := ""
		if pctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			hint = fmt.Sprintf(" (no answer within %v", wait)
			if tls {
				hint += "; rediss:// asks for TLS: does that port serve it?"
			}
			hint += ")"
		}
		return nil, nil, fmt.Errorf("connect to %s: %w%s", addr, err, hint)
	}
	return rdb, closeAll, nil
}

// clientAddr is the (first) address rdb dials, for checks and messages,
// and whether it asks for TLS.
func clientAddr(rdb redis.UniversalClient) (string, bool) {
	switch c := rdb.(type) {
	case *redis.Client:
		if c.Options().Network == "unix" || !strings.Contains(c.Options().Addr, ":") {
			return "", false // a socket, or a Sentinel's failover client
		}
		return c.Options().Addr, c.Options().TLSConfig != nil
	case *redis.ClusterClient:
		return c.Options().Addrs[0], c.Options().TLSConfig != nil
	}
	return "", false
}

// connectTimeout bounds the first call to a Redis, made to check it.
const connectTimeout = 10 * time.Second

// checkPort rejects a port outside 1..65535, which would otherwise only
// fail when dialled, as if Redis were down.
func checkPort(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q, want 1..65535", port)
	}
	return nil
}
