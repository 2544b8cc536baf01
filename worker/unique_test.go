package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// TestUniqueUntilFinished: a lock held until the task finishes has no
// expiry while the task waits or runs; it goes when the task succeeds or
// dies, or stays for the time after asked for; a lock for a time stays on
// a dead task; deleting a task releases its lock; bad uses are refused.
func TestUniqueUntilFinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	release := make(chan struct{})
	b.server(t, Config{Config: b.qcfg, Queues: map[string]int{"u": 1}}, HandlerFunc(func(ctx context.Context, task *Task) error {
		switch task.Type {
		case "block":
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		case "die":
			return SkipRetry(errors.New("no"))
		}
		return nil
	}))
	k := keys.For(b.qcfg.Prefix, "u", 0)
	lock := func(key string) string { return k.T + ":unique:" + key }
	enq := func(typ, key string, opts ...queue.Option) (*queue.TaskInfo, error) {
		opts = append([]queue.Option{queue.In("u"), queue.UniqueBy(key, time.Minute)}, opts...)
		return b.client.Enqueue(ctx, queue.NewRawTask(typ, nil), opts...)
	}
	state := func(id string, want queue.State) func() bool {
		return func() bool {
			ti, err := b.insp.GetTask(ctx, "u", id)
			return err == nil && ti.State == want
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, queue.ErrDuplicateUniqueTask) {
			t.Fatalf("%s: %v, want ErrDuplicateUniqueTask", what, err)
		}
	}

	// held, with no expiry, while the task runs; gone once it succeeds
	first, err := enq("block", "report", queue.UniqueUntilFinished(0), queue.Retention(time.Hour))
	must(t, err)
	waitFor(t, 15*time.Second, "the task running", state(first.ID, queue.StateActive))
	if ttl := b.rdb.PTTL(ctx, lock("report")).Val(); ttl != -1 {
		t.Fatalf("a lock held until the task finishes has a TTL of %v", ttl)
	}
	_, err = enq("ok", "report", queue.UniqueUntilFinished(0))
	refused("a duplicate while the task runs", err)
	close(release)
	waitFor(t, 15*time.Second, "the task done", state(first.ID, queue.StateSucceeded))
	if n := b.rdb.Exists(ctx, lock("report")).Val(); n != 0 {
		t.Fatal("the lock outlived its task")
	}
	_, err = enq("ok", "report", queue.UniqueUntilFinished(0))
	must(t, err)

	// kept for an hour after the task finished
	kept, err := enq("ok", "invoice", queue.UniqueUntilFinished(time.Hour), queue.Retention(time.Hour))
	must(t, err)
	waitFor(t, 15*time.Second, "the task done", state(kept.ID, queue.StateSucceeded))
	if ttl := b.rdb.PTTL(ctx, lock("invoice")).Val(); ttl <= 50*time.Minute || ttl > time.Hour {
		t.Fatalf("the lock after the task finished has a TTL of %v, want about an hour", ttl)
	}
	if b.rdb.HLen(ctx, k.T+":uafter").Val() != 0 {
		t.Error("the time after stayed in T:uafter once used")
	}
	_, err = enq("ok", "invoice", queue.UniqueUntilFinished(time.Hour))
	refused("a duplicate within the hour after", err)

	// a dead task releases a lock held until it finished, not one for a time
	dead, err := enq("die", "export", queue.UniqueUntilFinished(0))
	must(t, err)
	waitFor(t, 15*time.Second, "the task dead", state(dead.ID, queue.StateDead))
	_, err = enq("ok", "export", queue.UniqueUntilFinished(0))
	must(t, err)
	timed, err := enq("die", "sync")
	must(t, err)
	waitFor(t, 15*time.Second, "the task dead", state(timed.ID, queue.StateDead))
	_, err = enq("ok", "sync")
	refused("a duplicate of a dead task whose lock is for a time", err)

	// deleting a task releases its lock and its time after
	later, err := enq("ok", "digest", queue.UniqueUntilFinished(time.Hour), queue.ProcessIn(time.Hour))
	must(t, err)
	if b.rdb.HLen(ctx, k.T+":uafter").Val() != 1 {
		t.Fatal("no time after recorded for a waiting task")
	}
	must(t, b.insp.DeleteTask(ctx, "u", later.ID))
	if b.rdb.Exists(ctx, lock("digest")).Val() != 0 || b.rdb.HLen(ctx, k.T+":uafter").Val() != 0 {
		t.Fatal("deleting the task left its lock or its time after")
	}

	if _, err := enq("ok", "x", queue.UniqueUntilFinished(-time.Second)); !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("UniqueUntilFinished(-1s): %v, want ErrInvalidOption", err)
	}
	_, err = b.client.EnqueueWorkflow(ctx, queue.Chain(queue.NewRawTask("ok", nil, queue.In("u"), queue.UniqueUntilFinished(0))))
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("UniqueUntilFinished on a chain link: %v, want ErrInvalidOption", err)
	}
}
