package worker

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// freezer stops a client at the instant its blocking move took a task:
// every later command waits for thaw, then fails, as the calls of a
// process frozen by SIGSTOP and then killed never reach Redis.
type freezer struct {
	frozen atomic.Bool
	thaw   chan struct{}
}

var errFrozen = errors.New("frozen")

func (f *freezer) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (f *freezer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.frozen.Load() {
			<-f.thaw
			cmd.SetErr(errFrozen)
			return errFrozen
		}
		return next(ctx, cmd)
	}
}

func (f *freezer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.frozen.Load() {
			<-f.thaw
			for _, c := range cmds {
				c.SetErr(errFrozen)
			}
			return errFrozen
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() == "blmove" {
				if s, ok := c.(*redis.StringCmd); ok && s.Err() == nil && !strings.HasPrefix(s.Val(), "\xc1") {
					f.frozen.Store(true) // a task, not the dummy item
				}
			}
		}
		return err
	}
}

// TestStaleWorkerInflightReapedEverywhere: a worker of queue "a" dies
// just after its blocking move took a task, before its claim, and a
// worker of queue "b" only finds it stale first. It gives back the dead
// worker's in-flight list in "a" too before it drops the worker from
// <prefix>:workers, after which no worker would find it stale again: the
// task waited in that list for good (found by shardq doctor). A worker of
// "a" then runs it, once.
func TestStaleWorkerInflightReapedEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	fr := &freezer{thaw: make(chan struct{})}
	frozen := redis.NewClient(b.rdb.Options())
	frozen.AddHook(fr)
	rec := newRecorder(nil)
	cfg := func(id, q string) Config {
		return b.config(t, Config{WorkerID: id, Queues: map[string]int{q: 1}, Lease: time.Second,
			Heartbeat: 100 * time.Millisecond, ShutdownTimeout: time.Second})
	}
	w1, err := NewServer(frozen, cfg("w1", "a"), rec)
	must(t, err)
	must(t, w1.Start(ctx))
	t.Cleanup(func() {
		close(fr.thaw)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_ = w1.Shutdown(sctx)
		_ = frozen.Close()
	})
	waitFor(t, 10*time.Second, "w1 blocked on its empty queue", func() bool {
		info, err := b.rdb.Info(ctx, "clients").Result()
		return err == nil && !strings.Contains(info, "blocked_clients:0")
	})
	info := b.enqueue(t, queue.NewRawTask("t", nil), queue.In("a"))
	k := keys.For(b.qcfg.Prefix, "a", 0)
	waitFor(t, 10*time.Second, "the task in w1's in-flight list", func() bool {
		n, err := b.rdb.LLen(ctx, k.Inflight("w1")).Result()
		return err == nil && n == 1 && fr.frozen.Load()
	})
	startServer(t, b.rdb, cfg("w2", "b"), rec)
	waitFor(t, 10*time.Second, "w2 to drop w1 from the workers", func() bool {
		return errors.Is(b.rdb.ZScore(ctx, keys.Workers(b.qcfg.Prefix), "w1").Err(), redis.Nil)
	})
	if n, err := b.rdb.LLen(ctx, k.Inflight("w1")).Result(); err != nil || n != 0 {
		t.Fatalf("w1 dropped, and its in-flight list in queue a holds %d (%v)", n, err)
	}
	if qi, err := b.insp.QueueInfo(ctx, "a"); err != nil || qi.Pending != 1 {
		t.Fatalf("queue a after w1 was dropped: %+v, %v; want the task pending", qi, err)
	}
	startServer(t, b.rdb, cfg("w3", "a"), rec)
	waitFor(t, 10*time.Second, "the task run", func() bool { return rec.count(info.ID) >= 1 })
	waitFor(t, 10*time.Second, "its ack", func() bool {
		qi, err := b.insp.QueueInfo(ctx, "a")
		return err == nil && qi.Active == 0 && qi.Pending == 0
	})
	if n := rec.count(info.ID); n != 1 {
		t.Fatalf("the task ran %d times", n)
	}
}
