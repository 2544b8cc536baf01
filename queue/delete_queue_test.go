package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// TestDeleteQueue: DeleteQueue removes a queue and all its keys, and only
// its; without force it refuses a queue holding tasks or served by a live
// worker; an unknown queue is ErrNotFound.
func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Partitions: map[string]int{"busy": 2}})
	ctx := context.Background()
	keysOf := func(q string) []string {
		t.Helper()
		ks, err := b.rdb.Keys(ctx, "{"+b.cfg.Prefix+":"+q+":*").Result()
		must(t, err)
		return ks
	}
	// a queue with tasks in several states, one kept done, one unique
	for _, opts := range [][]Option{{In("busy")}, {In("busy"), ProcessIn(time.Hour)}, {In("busy"), Unique(time.Hour)}, {In("busy"), TaskID("mine")}} {
		_, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("x")), opts...)
		must(t, err)
	}
	keep, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("keep")), In("keep"))
	must(t, err)
	must(t, b.insp.SetLimits(ctx, "idle", Limits{Concurrency: 3})) // registered, no task
	keepKeys := keysOf("keep")

	if err := b.insp.DeleteQueue(ctx, "nope", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}
	err = b.insp.DeleteQueue(ctx, "busy", false)
	if !errors.Is(err, ErrQueueInUse) || !strings.Contains(err.Error(), "pending 3") || !strings.Contains(err.Error(), "scheduled 1") {
		t.Fatalf("busy queue without force: %v", err)
	}
	if len(keysOf("busy")) == 0 {
		t.Fatal("the refused delete removed keys")
	}

	// a live worker serving "idle" (its heartbeat and status, as a worker writes them)
	st, err := (&wire.WorkerStatus{Host: "h", PID: 1, Queues: map[string]int{"idle": 1}, Concurrency: 1}).Encode()
	must(t, err)
	must(t, b.rdb.ZAdd(ctx, keys.Workers(b.cfg.Prefix), redis.Z{Score: float64(time.Now().UnixMilli()), Member: "w1"}).Err())
	must(t, b.rdb.HSet(ctx, keys.WorkerStatus(b.cfg.Prefix), "w1", st).Err())
	if err := b.insp.DeleteQueue(ctx, "idle", false); !errors.Is(err, ErrQueueInUse) || !strings.Contains(err.Error(), "w1") {
		t.Fatalf("served queue without force: %v", err)
	}
	must(t, b.rdb.ZRem(ctx, keys.Workers(b.cfg.Prefix), "w1").Err())
	must(t, b.insp.DeleteQueue(ctx, "idle", false)) // empty and unserved: no force needed
	must(t, b.insp.DeleteQueue(ctx, "busy", true))

	for _, q := range []string{"busy", "idle"} {
		if ks := keysOf(q); len(ks) != 0 {
			t.Errorf("queue %q: keys left %v", q, ks)
		}
		if _, err := b.insp.QueueInfo(ctx, q); !errors.Is(err, ErrNotFound) {
			t.Errorf("queue %q after delete: %v", q, err)
		}
	}
	names, err := b.insp.Queues(ctx)
	must(t, err)
	if strings.Join(names, ",") != "keep" {
		t.Fatalf("queues after delete: %v, want [keep]", names)
	}
	if got := keysOf("keep"); len(got) != len(keepKeys) {
		t.Fatalf("the other queue's keys changed: %v, was %v", got, keepKeys)
	}
	if ti, err := b.insp.GetTask(ctx, "keep", keep.ID); err != nil || string(ti.Payload) != "keep" {
		t.Fatalf("the other queue's task: %+v, %v", ti, err)
	}
	// the uniqueness lock and the ID claim went with the queue: both enqueue again
	for _, opts := range [][]Option{{In("busy"), Unique(time.Hour)}, {In("busy"), TaskID("mine")}} {
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("x")), opts...); err != nil {
			t.Fatalf("enqueue %v after the delete: %v", opts, err)
		}
	}
}
