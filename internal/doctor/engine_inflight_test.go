package doctor

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
	"github.com/shardq/shardq/worker"
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
					f.frozen.Store(true)
				}
			}
		}
		return err
	}
}

// TestInflightOfAWorkerReapedElsewhere: a worker of queue "a" dies just
// after its blocking move took a task, before its claim; a worker of
// queue "b" only finds it stale first, reaps its in-flight lists in "b"'s
// partitions (worker/heartbeat.go, queueReap of s.partList()) and removes
// it from <prefix>:workers. From then on no worker takes it for stale,
// so nothing gives back its in-flight list in "a": the task never runs.
// A worker of "a" that runs meanwhile does not give it back either. The
// doctor finds the list (orphaned-inflight) and its repair gives it back,
// after which that worker runs the task once.
func TestInflightOfAWorkerReapedElsewhere(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	fr := &freezer{thaw: make(chan struct{})}
	frozenRDB := redis.NewClient(r.rdb.Options())
	frozenRDB.AddHook(fr)
	var runs counter
	h := worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error { runs.count(task.ID); return nil })
	start := func(rdb redis.UniversalClient, id, q string) *worker.Server {
		srv, err := worker.NewServer(rdb, worker.Config{Config: r.cfg, WorkerID: id, Queues: map[string]int{q: 1},
			Lease: time.Second, Heartbeat: 100 * time.Millisecond, ShutdownTimeout: time.Second, QueueRefresh: 100 * time.Millisecond}, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	stopAll := []func(){}
	defer func() {
		for i := len(stopAll) - 1; i >= 0; i-- {
			stopAll[i]()
		}
	}()
	w1 := start(frozenRDB, "w1", "a")
	stopAll = append(stopAll, func() {
		close(fr.thaw)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_ = w1.Shutdown(sctx)
		_ = frozenRDB.Close()
	})
	waitFor(t, 10*time.Second, "w1 blocked on its empty queue", func() bool {
		info, err := r.rdb.Info(ctx, "clients").Result()
		return err == nil && !strings.Contains(info, "blocked_clients:0")
	})
	ids := r.enqueue(t, 1, "t", queue.In("a"))
	k := keys.For(r.prefix, "a", 0)
	waitFor(t, 10*time.Second, "the task in w1's in-flight list", func() bool {
		n, err := r.rdb.LLen(ctx, k.Inflight("w1")).Result()
		return err == nil && n == 1 && fr.frozen.Load()
	})
	w2 := start(r.rdb, "w2", "b")
	stopAll = append(stopAll, func() {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_ = w2.Shutdown(sctx)
	})
	waitFor(t, 10*time.Second, "w2 to drop w1 from the workers", func() bool {
		err := r.rdb.ZScore(ctx, keys.Workers(r.prefix), "w1").Err()
		return errors.Is(err, redis.Nil)
	})
	n, err := r.rdb.LLen(ctx, k.Inflight("w1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Skip("the engine gave back w1's in-flight list: the gap this test shows is closed")
	}
	// a worker of queue a now beats for longer than it takes to find a
	// worker stale: it does not give the list back
	w3 := start(r.rdb, "w3", "a")
	stopAll = append(stopAll, func() {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_ = w3.Shutdown(sctx)
	})
	var first float64
	waitFor(t, 10*time.Second, "w3 beating for 2 s", func() bool {
		s, err := r.rdb.ZScore(ctx, keys.Workers(r.prefix), "w3").Result()
		if err != nil {
			return false
		}
		if first == 0 {
			first = s
		}
		return s-first >= 2000
	})
	if n, err = r.rdb.LLen(ctx, k.Inflight("w1")).Result(); err != nil || n != 1 || runs.get(ids[0]) != 0 {
		t.Fatalf("w1's in-flight list holds %d (%v), the task ran %d times", n, err, runs.get(ids[0]))
	}
	t.Logf("w1 is gone from %s, and after 2 s of a worker of queue a its in-flight list there still holds %d task", keys.Workers(r.prefix), n)
	rep := r.audit(t, true)
	if got := counts(rep); got["orphaned-inflight"] != 1 || rep.Repaired != rep.Violations {
		t.Fatalf("%d violations, %d repaired:%s", rep.Violations, rep.Repaired, describe(rep))
	}
	waitFor(t, 10*time.Second, "the task run", func() bool { return runs.get(ids[0]) >= 1 })
	r.settled(t, "a", nil)
	if got := runs.get(ids[0]); got != 1 {
		t.Fatalf("the task ran %d times", got)
	}
}
