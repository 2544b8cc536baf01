package queue_test

import (
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

func TestWorkers(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{Partitions: map[string]int{"q": 2}})
	b.worker(t, "q")
	running := b.enqueue(t, 3, typeBlock, queue.In("q"))
	b.enqueue(t, 2, typeOK, queue.In("other"))
	b.waitCounts(t, "q", "active", func(qi *queue.QueueInfo) bool { return qi.Active == 3 })
	// an idle worker that beat earlier
	must(t, b.rdb.ZAdd(b.ctx, keys.Workers(b.cfg.Prefix), redisZ(time.Now().Add(-time.Minute), "idle")).Err())

	b.calls.reset()
	ws, err := b.insp.Workers(b.ctx)
	must(t, err)
	if rt := b.calls.roundTrips.Load(); rt != 2 {
		t.Fatalf("Workers took %d round trips, want 2", rt)
	}
	if len(ws) != 2 || ws[0].ID != "w-TestWorkers" || ws[1].ID != "idle" {
		t.Fatalf("workers %+v", ws)
	}
	if age := time.Since(ws[0].LastHeartbeat); age < -time.Second || age > 10*time.Second {
		t.Fatalf("last heartbeat %v ago", age)
	}
	if got := ids(ws[0].Tasks); len(got) != 3 || !uniq(got)[running[0]] || !uniq(got)[running[2]] {
		t.Fatalf("worker runs %v, want %v", got, running)
	}
	if len(ws[1].Tasks) != 0 {
		t.Fatalf("idle worker runs %v", ids(ws[1].Tasks))
	}
}

func TestQueueInfos(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	b.enqueue(t, 3, typeOK, queue.In("x"))
	b.enqueue(t, 2, typeOK, queue.In("y"), queue.ProcessIn(time.Hour))
	qs, err := b.insp.QueueInfos(b.ctx)
	must(t, err)
	if len(qs) != 2 || qs[0].Queue != "x" || qs[0].Pending != 3 || qs[1].Queue != "y" || qs[1].Scheduled != 2 {
		t.Fatalf("QueueInfos = %+v %+v", qs[0], qs[1])
	}
}
