package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestClusterSlotMigration: while producers and workers run, the slot of
// a busy partition moves to another master (SETSLOT IMPORTING/MIGRATING,
// MIGRATE a few keys at a time, SETSLOT NODE). Scripts meet ASK and
// TRYAGAIN while the slot is open and MOVED after: each script declares
// all its keys in one slot, so Redis refuses it whole or runs it whole,
// and the refusals are retried (never resent after a lost reply). No task
// acknowledged to a producer is lost, none is stranded, and producers and
// workers follow the slot: the moved partition takes and runs tasks on its
// new master. Whether a client meets MOVED first or reloads its slot map
// on its own every ten seconds depends on timing, so the test waits on
// the partition's traffic rather than on that error. Beside the steady
// producers, a client of its own enqueues bursts of 64 tasks at once,
// whose calls coalesce into batch calls: those meet the slot's move too,
// and lose nothing either.
func TestClusterSlotMigration(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t, 3)
	rdb := clusterClient(t, cl)
	seen := watchErrors(rdb)
	prefix := redistest.Prefix(t)
	q, masters := spreadQueue(t, cl, prefix, 3)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}, ShardSize: 20}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	l := newLedger()
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		l.ran(task)
		time.Sleep(time.Millisecond)
		return nil
	})
	for range 2 {
		cfg := Config{Config: qcfg, Queues: map[string]int{q: 1}, Concurrency: 4, ForwardInterval: 100 * time.Millisecond}
		cfg.Logger = testLogger(t)
		startServer(t, rdb, cfg, h)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := produce(ctx, client, q, 4, 20_000, l)
	burstRdb := clusterClient(t, cl)
	burstCalls := &scriptCalls{}
	burstRdb.AddHook(burstCalls)
	burstClient, err := queue.NewClient(burstRdb, qcfg)
	must(t, err)
	var burstAcked atomic.Int64
	burstsDone := produceBursts(ctx, burstClient, q, 64, 100*time.Millisecond, l, &burstAcked)
	rounds := 1
	if soak() {
		rounds = 6
	}
	for round := range rounds {
		time.Sleep(1500 * time.Millisecond)
		p := round % 3
		from := masters[p]
		to := masters[(p+1)%3]
		if to == from {
			to = masters[(p+2)%3]
		}
		slot := cl.Slot(t, keys.For(prefix, q, p).T)
		t.Logf("round %d: slot %d (partition %d) from %s to %s", round, slot, p, from.Addr, to.Addr)
		cl.MigrateSlot(t, slot, from, to, 3, 20*time.Millisecond)
		masters[p] = cl.MasterOf(t, slot)
		if masters[p] != to {
			t.Fatalf("slot %d is served by %s after the migration, want %s", slot, masters[p].Addr, to.Addr)
		}
		cl.WaitHealthy(t)
		l.reset()
		l.setMark()
		moved := time.Now()
		waitFor(t, 30*time.Second, "the moved partition to take and run tasks on its new master", func() bool {
			return l.activeSince(moved, map[int]bool{p: true})
		})
	}
	stop()
	<-done
	<-burstsDone
	waitDrained(t, insp, q, l)
	time.Sleep(500 * time.Millisecond)
	f := l.figures(nil)
	t.Logf("migration figures (%d slot move(s)): %d acknowledged, %d lost, %d ran twice, %d failed enqueues %v; node errors seen: %v",
		rounds, f.acked, f.lost, f.twice, f.failed, f.errs, seen)
	if f.lost > 0 {
		t.Errorf("%d acknowledged tasks lost or stranded", f.lost)
	}
	t.Logf("bursts: %d acknowledged in %d script calls", burstAcked.Load(), burstCalls.n.Load())
	if burstAcked.Load() == 0 || burstCalls.n.Load() > burstAcked.Load()/2 {
		t.Errorf("bursts: %d tasks acknowledged in %d script calls; want them coalesced, under half as many calls", burstAcked.Load(), burstCalls.n.Load())
	}
}
