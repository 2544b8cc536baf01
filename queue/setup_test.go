package queue

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
)

// bundle is what most tests need: a client and inspector over their own
// Redis, with their own key prefix.
type bundle struct {
	srv    *redistest.Server
	rdb    *redis.Client
	client *Client
	insp   *Inspector
	cfg    Config
	hook   *countHook
}

func setup(t *testing.T, cfg Config, opts ...redistest.Option) *bundle {
	t.Helper()
	return setupTB(t, cfg, opts...)
}

func setupTB(t testing.TB, cfg Config, opts ...redistest.Option) *bundle {
	t.Helper()
	srv := redistest.Start(t, opts...)
	rdb := srv.Client(t)
	hook := &countHook{}
	rdb.AddHook(hook)
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	client, err := NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	insp, err := NewInspector(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{srv: srv, rdb: rdb, client: client, insp: insp, cfg: cfg, hook: hook}
}

// warm enqueues to a queue of its own, so the script cache and the
// connection pool are warm, then zeroes the counters: what follows counts
// only the steady state (a cold cache costs one EVAL per script, once).
// The first enqueue to a queue runs enqueue_capped.lua, which finds no
// MaxDepth; the second runs enqueue_one.lua (a single plain task), the
// batch enqueue.lua.
func (b *bundle) warm(t *testing.T) {
	t.Helper()
	for range 2 {
		_, err := b.client.Enqueue(context.Background(), NewRawTask("warm", nil), In("warm-up"))
		must(t, err)
	}
	_, err := b.client.EnqueueMany(context.Background(), []*Task{NewRawTask("warm", nil)}, In("warm-up"))
	must(t, err)
	b.hook.reset()
}

// countHook counts script calls (EVALSHA and EVAL) and round trips.
type countHook struct {
	scripts    atomic.Int64
	roundTrips atomic.Int64
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isHandshake(cmd) {
			return next(ctx, cmd)
		}
		h.roundTrips.Add(1)
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isHandshake(cmds[0]) {
			return next(ctx, cmds)
		}
		h.roundTrips.Add(1)
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *countHook) count(cmd redis.Cmder) {
	switch strings.ToLower(cmd.Name()) {
	case "evalsha", "eval", "evalsha_ro", "eval_ro":
		h.scripts.Add(1)
	}
}

// isHandshake reports go-redis's own connection set-up (HELLO, CLIENT
// SETINFO) on a newly dialled connection: not a round trip of shardq's.
func isHandshake(cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "hello", "client":
		return true
	}
	return false
}

func (h *countHook) reset() { h.scripts.Store(0); h.roundTrips.Store(0) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// isNetErr reports whether err carries a network error.
func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return strings.Contains(err.Error(), "connection refused") || asAny(err, &ne) || asAny(err, &oe)
}

func asAny[T any](err error, target *T) bool { return errors.As(err, target) }

// usedMemoryTB is INFO memory's used_memory.
func usedMemoryTB(tb testing.TB, rdb redis.UniversalClient) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("INFO memory: no used_memory")
	return 0
}
