package serve

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/queue"
)

// TestOpenRefusesAnotherMajor: a worker whose prefix holds data of
// another protocol major does not start, names both versions, and writes
// nothing: no heartbeat, no registry entry.
func TestOpenRefusesAnotherMajor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.rdb.Set(ctx, keys.Protocol(b.qcfg.Prefix), "2.0", 0)
	err := New(b.rdb, b.config(t, Config{}, succeed)).Open(ctx)
	if !errors.Is(err, protocol.ErrIncompatible) || !strings.Contains(err.Error(), "holds 2.0, this process follows 1.0") {
		t.Fatalf("Open under a 2.0 prefix = %v, want ErrIncompatible naming 2.0 and 1.0", err)
	}
	for _, k := range []string{keys.Workers(b.qcfg.Prefix), keys.Queues(b.qcfg.Prefix), keys.WorkerStatus(b.qcfg.Prefix)} {
		if n := b.rdb.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("the refused worker wrote %s", k)
		}
	}
}

// TestStopsLeasingWhenTheMajorChanges: a running worker that finds its
// prefix moved to another major leases nothing more, and the tasks wait
// in pending rather than going to dead; it publishes its own version.
func TestStopsLeasingWhenTheMajorChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var ran, beats atomic.Int64
	s := New(b.rdb, b.config(t, Config{Lease: time.Second, Heartbeat: 50 * time.Millisecond}, func(context.Context, *Job, Fields) Verdict {
		ran.Add(1)
		return Verdict{}
	}))
	s.SetProbe(&ProbeFuncs{OnBeforeExtend: func() { beats.Add(1) }})
	must(t, s.Open(ctx))
	s.Launch()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	enqueueN(t, b, 1)
	waitFor(t, "the first task ran", func() bool { return ran.Load() == 1 })
	waitFor(t, "the worker's status with its version 1.0", func() bool {
		return strings.Contains(b.rdb.HGet(ctx, keys.WorkerStatus(b.qcfg.Prefix), s.cfg.WorkerID).Val(), "\xa1v\xa31.0")
	})

	b.rdb.Set(ctx, keys.Protocol(b.qcfg.Prefix), "2.0", 0)
	waitFor(t, "the fetchers stopped", func() bool { return s.fetchCtx.Err() != nil })
	enqueueN(t, b, 3)
	// a last blocking move may bring one: it goes back to pending
	waitFor(t, "three tasks pending", func() bool {
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Pending == 3
	})
	// three heartbeats later, nothing was leased
	from := beats.Load()
	waitFor(t, "three more heartbeats", func() bool { return beats.Load() >= from+3 })
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if ran.Load() != 1 || qi.Pending != 3 || qi.Active != 0 || qi.Dead != 0 {
		t.Fatalf("after the major changed: %d ran, queue %+v; want 1 ran and 3 pending", ran.Load(), qi)
	}
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
