package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestProgressAndResult: handlers report progress (throttled) and write
// results; GetTask shows both; WaitResult returns the result without a
// tight loop, the dead task's error, or the context's; a result over the
// cap is a clear error and nothing is written; without Retention the
// result leaves with the task.
func TestProgressAndResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.qcfg.MaxPayloadSize = 1000
	b.server(t, Config{Config: b.qcfg}, HandlerFunc(func(ctx context.Context, task *Task) error {
		switch task.Type {
		case "answer":
			for i := range 50 { // a chatty handler: throttled to one write
				if err := task.SetProgress(ctx, i, fmt.Sprintf("step %d", i)); err != nil {
					return err
				}
			}
			mid, err := b.insp.GetTask(ctx, queue.DefaultQueue, task.ID)
			if err != nil || mid.Progress == nil || mid.Progress.Percent != 0 || mid.Progress.Message != "step 0" {
				return SkipRetry(fmt.Errorf("progress after 50 quick reports: %+v, %v", mid.Progress, err))
			}
			if err := task.SetProgress(ctx, 100, "done"); err != nil { // 100 is always written
				return err
			}
			return task.SetResult(ctx, []byte("42"))
		case "huge":
			err := task.SetResult(ctx, make([]byte, 1001))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "result too large") {
				return SkipRetry(fmt.Errorf("want ErrInvalid saying the result is too large, got %v", err))
			}
			return SkipRetry(err)
		case "bad":
			return SkipRetry(task.SetProgress(ctx, 101, ""))
		case "slow":
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			return nil
		}
		return task.SetResult(ctx, []byte("not kept"))
	}))

	info := b.enqueue(t, queue.NewRawTask("answer", nil), queue.Retention(time.Hour))
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := b.insp.WaitResult(wctx, queue.DefaultQueue, info.ID)
	if err != nil || string(res) != "42" {
		t.Fatalf("WaitResult: %q, %v", res, err)
	}
	ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	if err != nil || !ti.HasResult || string(ti.Result) != "42" || ti.Progress == nil || ti.Progress.Percent != 100 || ti.Progress.Message != "done" {
		t.Fatalf("GetTask: %+v, %v", ti, err)
	}

	huge := b.enqueue(t, queue.NewRawTask("huge", nil), queue.Retention(time.Hour))
	if _, err := b.insp.WaitResult(wctx, queue.DefaultQueue, huge.ID); !errors.Is(err, queue.ErrTaskDead) || !strings.Contains(err.Error(), "result too large") {
		t.Fatalf("oversized result: %v", err)
	}
	if ti, _ := b.insp.GetTask(ctx, queue.DefaultQueue, huge.ID); ti.HasResult {
		t.Fatal("an oversized result was written")
	}
	bad := b.enqueue(t, queue.NewRawTask("bad", nil))
	if _, err := b.insp.WaitResult(wctx, queue.DefaultQueue, bad.ID); !errors.Is(err, queue.ErrTaskDead) || !strings.Contains(err.Error(), "invalid: progress 101%") {
		t.Fatalf("101%%: %v", err)
	}

	slow := b.enqueue(t, queue.NewRawTask("slow", nil))
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if _, err := b.insp.WaitResult(short, queue.DefaultQueue, slow.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitResult past its context: %v", err)
	}

	gone := b.enqueue(t, queue.NewRawTask("plain", nil)) // no Retention: nothing kept
	waitFor(t, 10*time.Second, "the plain task gone", func() bool {
		_, err := b.insp.GetTask(ctx, queue.DefaultQueue, gone.ID)
		return errors.Is(err, queue.ErrNotFound)
	})
	if b.rdb.HExists(ctx, keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0).Result(), wire.StoredID(gone.ID)).Val() {
		t.Fatal("the result of a task without Retention outlived it")
	}
	if (&Task{ID: "x"}).SetProgress(ctx, 1, "") == nil {
		t.Fatal("SetProgress on a Task no server runs: no error")
	}
}

// TestProgressSurvivesCrash: a worker process killed mid-task leaves the
// task's progress, no result, and the task is retried by another worker,
// whose result WaitResult returns.
func TestProgressSurvivesCrash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.killThenRerun(t, "p", handleProgress, func(id string) {
		ti, err := b.insp.GetTask(ctx, "p", id)
		if err != nil || ti.Progress == nil || ti.Progress.Percent != 40 || ti.Progress.Message != "working" || ti.HasResult || ti.State == queue.StateSucceeded {
			t.Fatalf("after the kill: %+v, %v; want progress 40%% working, no result, not done", ti, err)
		}
	})
	if err != nil || string(res) != "result of attempt 2" {
		t.Fatalf("WaitResult: %q, %v", res, err)
	}
}

// killThenRerun enqueues a task of queue q, kept an hour, for a child
// worker with handler; that worker must die by SIGKILL while running it.
// After afterKill(task ID), a second child runs it again, and
// killThenRerun returns the task's result as WaitResult does.
func (b *bundle) killThenRerun(t *testing.T, q, handler string, afterKill func(id string)) ([]byte, error) {
	t.Helper()
	base := childOpts{Addr: b.srv.Addr, Prefix: b.qcfg.Prefix, Queue: q, Concurrency: 1,
		Lease: time.Second, Heartbeat: 300 * time.Millisecond, Handler: handler}
	killer := base
	killer.ID = "killer"
	k := startChild(t, "killer", killer)
	k.waitReady(t, b.rdb)
	info := b.enqueue(t, queue.NewRawTask(q, nil), queue.In(q), queue.Retention(time.Hour))
	waitFor(t, 15*time.Second, "the worker to die mid-task", k.exited)
	if !k.killedBySIGKILL() {
		t.Fatal("the child did not die by SIGKILL")
	}
	afterKill(info.ID)
	healthy := base
	healthy.ID = "healthy"
	h := startChild(t, "healthy", healthy)
	h.waitReady(t, b.rdb)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.insp.WaitResult(wctx, q, info.ID)
}
