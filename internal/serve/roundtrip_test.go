package serve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/tripcount"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestDequeueCarriesOutcomes shows a pop carrying the outcomes waiting in
// the outbox: one round trip writes them and leases the next tasks.
func TestDequeueCarriesOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	batch := make([]*queue.Task, 6)
	for i := range batch {
		batch[i] = queue.NewRawTask("t", []byte{byte(i)})
	}
	if _, err := b.client.EnqueueMany(ctx, batch, queue.In("q"), queue.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s, p := unstarted(t, b, succeed)
	first := popN(t, s, p, 3)
	for _, l := range first {
		s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck, retentionMS: time.Hour.Milliseconds()})
	}

	hook := tripcount.New()
	b.rdb.AddHook(hook)
	popN(t, s, p, 3)
	if trips, carried := hook.Count(); trips != 1 || carried != 1 || hook.Calls()[0] != 1 {
		t.Fatalf("round trips %v of %v script calls; want one call, the pop running the acks", hook.Trips(), hook.Calls())
	}
	if n := s.outbox.Len(); n != 0 {
		t.Fatalf("%d outcomes left in the outbox", n)
	}
	for _, l := range first {
		info, err := b.insp.GetTask(ctx, "q", wire.PublicID(l.id))
		if err != nil || info.State != queue.StateSucceeded {
			t.Fatalf("task %s after the carried ack: %+v, %v", l.id, info, err)
		}
	}
}

// TestDequeueGivesBackFailedOutcomes shows outcomes a failed round trip
// could not write going back to the outbox, to be written later.
func TestDequeueGivesBackFailedOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("q")); err != nil {
		t.Fatal(err)
	}
	s, p := unstarted(t, b, succeed)
	l := popN(t, s, p, 1)[0]
	s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck})
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.dequeue(dead, p, 1, 0, false); err == nil {
		t.Fatal("pop with a cancelled context: no error")
	}
	if n := s.outbox.Len(); n != 1 {
		t.Fatalf("outbox holds %d outcomes after the failed round trip, want the ack back", n)
	}
	if failed, err := s.writeOnce(s.outbox.Take(maxOutcomeBatch)); err != nil || len(failed) != 0 {
		t.Fatalf("writing the given-back ack: %d failed, %v", len(failed), err)
	}
	if info, err := b.insp.QueueInfo(ctx, "q"); err != nil || info.Active != 0 {
		t.Fatalf("queue after the ack: %+v, %v", info, err)
	}
}

// TestTaskStartingAfterStopIsCancelled: a handler that joins the running
// registry after shutdown cancelled the others (its context is not a child
// of a shared one) still sees the shutdown cause, and its task is requeued.
func TestTaskStartingAfterStopIsCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("q")); err != nil {
		t.Fatal(err)
	}
	var seen error
	s, p := unstarted(t, b, func(ctx context.Context, _ *Job, _ Fields) Verdict {
		seen = context.Cause(ctx)
		if errors.Is(seen, errShutdown) {
			return Verdict{Requeue: true}
		}
		return Verdict{Err: seen}
	})
	l := popN(t, s, p, 1)[0]
	s.stopTasks(errShutdown) // nothing is running yet
	s.run(p, l)
	if !errors.Is(seen, errShutdown) {
		t.Fatalf("handler saw cause %v, want the shutdown cause", seen)
	}
	out := s.outbox.Take(maxOutcomeBatch)
	if len(out) != 1 || out[0].kind != outcomeRequeue || out[0].id != l.id {
		t.Fatalf("outcomes %+v, want the task requeued", out)
	}
}

// TestDequeueAcksMixedBatch: one pop carries acks of every kind at once:
// tasks kept for their retention and tasks that leave no trace, in any
// order, a unique task whose lock goes, a task with a group whose
// count goes down, and a stale token, which changes nothing.
func TestDequeueAcksMixedBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type spec struct {
		opts []queue.Option
		kept bool
	}
	specs := []spec{
		{nil, false},
		{[]queue.Option{queue.Retention(time.Hour)}, true},
		{[]queue.Option{queue.UniqueBy("u1", time.Hour)}, false},
		{[]queue.Option{queue.Group("tenant")}, false},
		{[]queue.Option{queue.Retention(time.Hour), queue.Group("tenant")}, true},
		{nil, false},
	}
	ids := make([]string, len(specs))
	for i, sp := range specs {
		info, err := b.client.Enqueue(ctx, queue.NewRawTask("t", []byte{byte(i)}), append(sp.opts, queue.In("q"))...)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	s, p := unstarted(t, b, succeed)
	byID := map[string]leased{}
	for _, l := range popN(t, s, p, len(specs)) {
		byID[wire.PublicID(l.id)] = l
	}
	for i, id := range ids {
		l, ok := byID[id]
		if !ok {
			t.Fatalf("task %s was not leased", id)
		}
		var retention int64
		if specs[i].kept {
			retention = time.Hour.Milliseconds()
		}
		unique := ""
		if i == 2 {
			unique = "u1"
		}
		s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck, retentionMS: retention, unique: unique})
	}
	// a stale ack: the token of a lease that is not the task's current one
	s.finish(outcome{p: p, id: byID[ids[0]].id, token: byID[ids[0]].token + 7, kind: outcomeAck})

	hook := tripcount.New()
	b.rdb.AddHook(hook)
	r, err := s.dequeue(ctx, p, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(hook.Calls()) != 1 || hook.Calls()[0] != 1 {
		t.Fatalf("script calls per round trip %v, want one round trip of one call", hook.Calls())
	}
	want := []int64{1, 1, 1, 1, 1, 1, 0}
	if len(r.codes) != len(want) {
		t.Fatalf("ack codes %v, want %v", r.codes, want)
	}
	for i, c := range r.codes {
		if c.(int64) != want[i] {
			t.Fatalf("ack codes %v, want %v", r.codes, want)
		}
	}
	k := p.k
	for i, id := range ids {
		info, err := b.insp.GetTask(ctx, "q", id)
		switch {
		case specs[i].kept && (err != nil || info.State != queue.StateSucceeded):
			t.Fatalf("kept task %d: %+v, %v; want done", i, info, err)
		case !specs[i].kept && (err == nil && info.State != queue.StateSucceeded):
			t.Fatalf("task %d: %+v; want it gone", i, info)
		}
		sid := wire.StoredID(id) // the form Redis holds
		inMsg := b.rdb.HExists(ctx, k.Msg(), sid).Val()
		inState := b.rdb.HExists(ctx, k.State(), sid).Val()
		if inMsg != specs[i].kept || inState != specs[i].kept {
			t.Fatalf("task %d (kept %v): message stored %v, record stored %v", i, specs[i].kept, inMsg, inState)
		}
		if b.rdb.ZScore(ctx, k.Active(), sid).Err() == nil {
			t.Fatalf("task %d still active", i)
		}
	}
	if n := b.rdb.ZCard(ctx, k.Done()).Val(); n != 2 {
		t.Fatalf("done feed holds %d tasks, want the 2 kept", n)
	}
	if n := b.rdb.Exists(ctx, k.Unique("u1")).Val(); n != 0 {
		t.Fatal("the unique task's lock outlived its ack")
	}
	if v, err := b.rdb.HGet(ctx, k.KeyActive(), "tenant").Result(); err != redis.Nil {
		t.Fatalf("tenant's running count %q, %v after both its tasks were acked", v, err)
	}
}
