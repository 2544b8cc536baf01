package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestDuplicateTaskIDReturnsTheTask: an enqueue with a TaskID already
// claimed is ErrDuplicateTaskID and returns the task that holds the ID:
// pending with its own payload, then done with its result while it is
// kept, and with its ID alone once it is gone; EnqueueMany does the same
// per task.
func TestDuplicateTaskIDReturnsTheTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first := b.enqueue(t, queue.NewRawTask("charge", []byte("first")), queue.In("ids"), queue.TaskID("order-7"), queue.Retention(time.Hour))

	again := func(id string, opts ...queue.Option) *queue.TaskInfo {
		t.Helper()
		opts = append([]queue.Option{queue.In("ids"), queue.TaskID(id)}, opts...)
		info, err := b.client.Enqueue(ctx, queue.NewRawTask("charge", []byte("second")), opts...)
		if !errors.Is(err, queue.ErrDuplicateTaskID) || info == nil || info.ID != id || info.Queue != "ids" {
			t.Fatalf("enqueue of %q again: %+v, %v; want the task that holds it and ErrDuplicateTaskID", id, info, err)
		}
		return info
	}
	if info := again("order-7"); info.State != queue.StatePending || string(info.Payload) != "first" || info.Partition != first.Partition {
		t.Fatalf("a pending duplicate: state %q, payload %q; want the first task, pending", info.State, info.Payload)
	}

	b.server(t, Config{Config: b.qcfg, Queues: map[string]int{"ids": 1}}, HandlerFunc(func(ctx context.Context, task *Task) error {
		return task.SetResult(ctx, append([]byte("receipt of "), task.Payload...))
	}))
	waitFor(t, 15*time.Second, "order-7 done", func() bool {
		ti, err := b.insp.GetTask(ctx, "ids", "order-7")
		return err == nil && ti.State == queue.StateSucceeded
	})
	if info := again("order-7"); info.State != queue.StateSucceeded || !info.HasResult || string(info.Result) != "receipt of first" {
		t.Fatalf("a finished duplicate: state %q, result %q; want done with the first attempt's result", info.State, info.Result)
	}

	// a task not kept: its ID stays claimed, and only the ID is known
	b.enqueue(t, queue.NewRawTask("charge", nil), queue.In("ids"), queue.TaskID("order-9"))
	waitFor(t, 15*time.Second, "order-9 gone", func() bool {
		_, err := b.insp.GetTask(ctx, "ids", "order-9")
		return errors.Is(err, queue.ErrNotFound)
	})
	if info := again("order-9"); info.State != "" || info.Payload != nil {
		t.Fatalf("a duplicate of a task gone: %+v; want its ID and queue alone", info)
	}

	infos, err := b.client.EnqueueMany(ctx, []*queue.Task{
		queue.NewRawTask("charge", nil, queue.TaskID("order-7")),
		queue.NewRawTask("charge", []byte("new"), queue.TaskID("order-8"), queue.Retention(time.Hour)),
	}, queue.In("ids"))
	var ee *queue.EnqueueError
	if !errors.As(err, &ee) || !errors.Is(ee.Errs[0], queue.ErrDuplicateTaskID) || ee.Errs[1] != nil {
		t.Fatalf("EnqueueMany: %v; want the first a duplicate, the second enqueued", err)
	}
	if infos[0] == nil || infos[0].State != queue.StateSucceeded || string(infos[0].Result) != "receipt of first" {
		t.Fatalf("EnqueueMany's duplicate: %+v; want order-7 done with its result", infos[0])
	}
	if infos[1] == nil || infos[1].ID != "order-8" {
		t.Fatalf("EnqueueMany's new task: %+v", infos[1])
	}
}
