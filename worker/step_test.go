package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// charge is a step's value of a struct type: it comes back decoded.
type charge struct {
	Receipt string
	Cents   int
}

// stepRuns counts the runs of each step's function, by "<step>@<attempt>".
type stepRuns struct {
	mu   sync.Mutex
	runs []string
}

func (r *stepRuns) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, s)
}

func (r *stepRuns) list() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.runs, " ")
}

// TestStepResumes: a handler of three steps fails after the second; the
// retry skips the first two, gets their recorded values, and runs only
// the third. GetTask shows the steps of a kept task, and a task that is
// not kept leaves no steps behind.
func TestStepResumes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var runs stepRuns
	seen := make(chan string, 4)
	b.server(t, Config{Config: b.qcfg}, HandlerFunc(func(ctx context.Context, task *Task) error {
		c, err := Step(ctx, "charge", func(ctx context.Context) (charge, error) {
			runs.add(fmt.Sprintf("charge@%d", task.Attempt))
			return charge{Receipt: fmt.Sprintf("r-%d", task.Attempt), Cents: 1250}, nil
		})
		if err != nil {
			return err
		}
		n, err := Step(ctx, "reserve", func(ctx context.Context) (int, error) {
			runs.add(fmt.Sprintf("reserve@%d", task.Attempt))
			return 10 * task.Attempt, nil
		})
		if err != nil {
			return err
		}
		if task.Attempt == 1 {
			return RetryIn(time.Millisecond, errors.New("the mail server is down"))
		}
		mail, err := Step(ctx, "mail", func(ctx context.Context) (string, error) {
			runs.add(fmt.Sprintf("mail@%d", task.Attempt))
			return fmt.Sprintf("mailed %s for %d", c.Receipt, n), nil
		})
		if err != nil {
			return err
		}
		seen <- mail
		return nil
	}))

	kept := b.enqueue(t, queue.NewRawTask("order", nil), queue.Retention(time.Hour))
	select {
	case got := <-seen:
		// the second attempt saw the first attempt's values
		if got != "mailed r-1 for 10" {
			t.Fatalf("step three saw %q, want the recorded values of attempt 1", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the retry never finished; step runs: %s", runs.list())
	}
	if got, want := runs.list(), "charge@1 reserve@1 mail@2"; got != want {
		t.Errorf("step runs %q, want %q: a finished step ran again, or a step did not run", got, want)
	}
	waitFor(t, 10*time.Second, "the task done", func() bool {
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, kept.ID)
		return err == nil && ti.State == queue.StateSucceeded
	})
	ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, kept.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range ti.Steps {
		names = append(names, st.Name)
		if st.FinishedAt.IsZero() || time.Since(st.FinishedAt) > time.Hour {
			t.Errorf("step %q finished at %v", st.Name, st.FinishedAt)
		}
	}
	if strings.Join(names, ",") != "charge,reserve,mail" {
		t.Fatalf("GetTask steps %q, want charge,reserve,mail in the order they finished", names)
	}
	var c charge
	if err := ti.Steps[0].Decode(&c); err != nil || c != (charge{Receipt: "r-1", Cents: 1250}) {
		t.Errorf("step charge decodes to %+v, %v", c, err)
	}

	gone := b.enqueue(t, queue.NewRawTask("order", nil))
	<-seen
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	waitFor(t, 10*time.Second, "the task without retention gone", func() bool {
		_, err := b.insp.GetTask(ctx, queue.DefaultQueue, gone.ID)
		return errors.Is(err, queue.ErrNotFound)
	})
	if b.rdb.HExists(ctx, k.Steps(), wire.StoredID(gone.ID)).Val() {
		t.Error("the steps of a task without Retention outlived it")
	}
	if !b.rdb.HExists(ctx, k.Steps(), wire.StoredID(kept.ID)).Val() {
		t.Error("a kept task lost its steps")
	}
	if err := b.insp.DeleteTask(ctx, queue.DefaultQueue, kept.ID); err != nil {
		t.Fatal(err)
	}
	if b.rdb.HExists(ctx, k.Steps(), wire.StoredID(kept.ID)).Val() {
		t.Error("a deleted task's steps stayed")
	}
}

// TestStepBadUse: Step outside a handler, a bad name, a value over the
// cap, a failing step, a write under a lost lease, and Redis gone each
// give a clear error, and none records a step.
func TestStepBadUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.qcfg.MaxPayloadSize = 1000
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	if _, err := Step(ctx, "x", func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not a running task") {
		t.Fatalf("Step outside a handler: %v, want ErrInvalid saying it is not a running task", err)
	}
	var fails atomic.Int32
	b.server(t, Config{Config: b.qcfg}, HandlerFunc(func(ctx context.Context, task *Task) error {
		check := func(what string, err error, says string) error {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), task.ID) || !strings.Contains(err.Error(), says) {
				return SkipRetry(fmt.Errorf("%s: %v, want ErrInvalid naming the task and saying %q", what, err, says))
			}
			return nil
		}
		ran := false
		run := func(context.Context) (int, error) { ran = true; return 1, nil }
		_, err := Step(ctx, "", run)
		if e := check("an empty name", err, "step name"); e != nil {
			return e
		}
		_, err = Step(ctx, strings.Repeat("n", 201), run)
		if e := check("a 201-byte name", err, "step name"); e != nil {
			return e
		}
		if ran {
			return SkipRetry(errors.New("a step with a bad name ran"))
		}
		big, err := Step(ctx, "big", func(context.Context) ([]byte, error) { return make([]byte, 1001), nil })
		if e := check("a value over the cap", err, "result too large"); e != nil {
			return e
		}
		if len(big) != 1001 {
			return SkipRetry(fmt.Errorf("a value over the cap: got %d bytes back, want fn's 1001", len(big)))
		}
		boom := errors.New("boom")
		if _, err := Step(ctx, "flaky", func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
			return SkipRetry(fmt.Errorf("a failing step: %v, want its error", err))
		}
		// a write under another token, as a worker whose lease was taken
		// over would make: refused
		stale, err := script.Step.Run(ctx, b.rdb, []string{k.State(), k.Steps()}, wire.StoredID(task.ID), task.job.Token()+1, "x").Int()
		if err != nil || stale != 0 {
			return SkipRetry(fmt.Errorf("a step under a stale token: %d, %v; want 0", stale, err))
		}
		if b.rdb.HExists(ctx, k.Steps(), wire.StoredID(task.ID)).Val() {
			return SkipRetry(errors.New("a refused, failed or oversized step was recorded"))
		}
		if fails.Add(1) == 1 {
			return RetryIn(time.Millisecond, boom)
		}
		// on the retry the failed step runs again
		v, err := Step(ctx, "flaky", func(context.Context) (int, error) { return 7, nil })
		if err != nil || v != 7 {
			return SkipRetry(fmt.Errorf("the failed step on the retry: %d, %v", v, err))
		}
		return task.SetResult(ctx, []byte("ok"))
	}))
	info := b.enqueue(t, queue.NewRawTask("bad", nil), queue.Retention(time.Hour))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if res, err := b.insp.WaitResult(wctx, queue.DefaultQueue, info.ID); err != nil || string(res) != "ok" {
		t.Fatalf("WaitResult: %q, %v", res, err)
	}
	ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	if err != nil || len(ti.Steps) != 1 || ti.Steps[0].Name != "flaky" {
		t.Fatalf("steps %+v, %v: want flaky alone", ti.Steps, err)
	}
}

// TestStepRedisGone: a step whose record cannot be written, Redis gone,
// returns the step's value and an error naming the step and the task.
func TestStepRedisGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ready, killed := make(chan struct{}), make(chan struct{})
	type outcome struct {
		v   int
		err error
	}
	got := make(chan outcome, 1)
	b.server(t, Config{Config: b.qcfg}, HandlerFunc(func(ctx context.Context, task *Task) error {
		if _, err := Step(ctx, "first", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return err
		}
		close(ready)
		<-killed
		v, err := Step(ctx, "second", func(context.Context) (int, error) { return 2, nil })
		if err != nil {
			err = fmt.Errorf("%w (task %s)", err, task.ID)
		}
		got <- outcome{v, err}
		return err
	}))
	info := b.enqueue(t, queue.NewRawTask("gone", nil))
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler never ran its first step")
	}
	b.srv.Kill(t)
	close(killed)
	select {
	case o := <-got:
		if o.err == nil || o.v != 2 || !strings.Contains(o.err.Error(), `record step "second" of task `+info.ID) {
			t.Fatalf("Step with Redis gone: %d, %v; want 2 and an error naming the step and the task", o.v, o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Step with Redis gone never returned")
	}
}

// TestStepCrash: a worker process killed with SIGKILL after two of three
// steps; another worker runs the task again: it runs only the third step,
// and the task's result carries the values the first two recorded.
func TestStepCrash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.killThenRerun(t, "s", handleSteps, func(string) {})
	if err != nil || string(res) != "one of attempt 1, two of attempt 1, three of attempt 2" {
		t.Fatalf("WaitResult: %q, %v; want the first two steps' values from attempt 1", res, err)
	}
	runs, err := b.rdb.LRange(context.Background(), recKeysFor(b.qcfg.Prefix).stepRuns(), 0, -1).Result()
	if err != nil || strings.Join(runs, " ") != "one@1 two@1 three@2" {
		t.Fatalf("step runs %q, %v; want one@1 two@1 three@2", runs, err)
	}
}

// TestStepAfterRunTask: a task that went to dead after a step keeps the
// step; run again by an operator, it skips the step.
func TestStepAfterRunTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var runs stepRuns
	done := make(chan string, 1)
	b.server(t, Config{Config: b.qcfg}, HandlerFunc(func(ctx context.Context, task *Task) error {
		v, err := Step(ctx, "export", func(context.Context) (string, error) {
			runs.add(fmt.Sprintf("export@%d", task.Attempt))
			return fmt.Sprintf("file of attempt %d", task.Attempt), nil
		})
		if err != nil {
			return err
		}
		if task.Attempt == 1 {
			return SkipRetry(errors.New("the upload failed for good"))
		}
		done <- v
		return nil
	}))
	info := b.enqueue(t, queue.NewRawTask("export", nil))
	waitFor(t, 15*time.Second, "the task dead", func() bool {
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return err == nil && ti.State == queue.StateDead
	})
	if ti, _ := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID); len(ti.Steps) != 1 || ti.Steps[0].Name != "export" {
		t.Fatalf("a dead task's steps: %+v", ti.Steps)
	}
	if err := b.insp.RunTask(ctx, queue.DefaultQueue, info.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		if v != "file of attempt 1" {
			t.Fatalf("the run again got %q, want the recorded value of attempt 1", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the task run again never finished")
	}
	if got := runs.list(); got != "export@1" {
		t.Fatalf("step runs %q, want export@1 alone", got)
	}
}

// TestDeadTrimForgetsExtras: a task trimmed from a full dead feed takes
// its progress, result and steps out of Redis; the task kept has them.
func TestDeadTrimForgetsExtras(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.server(t, Config{Config: b.qcfg, DeadSize: 1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		if err := task.SetProgress(ctx, 50, "half"); err != nil {
			return err
		}
		if err := task.SetResult(ctx, []byte("partial")); err != nil {
			return err
		}
		if _, err := Step(ctx, "one", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return err
		}
		return SkipRetry(errors.New("no"))
	}))
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	has := func(id string) []bool {
		sid := wire.StoredID(id)
		return []bool{b.rdb.HExists(ctx, k.Progress(), sid).Val(), b.rdb.HExists(ctx, k.Result(), sid).Val(), b.rdb.HExists(ctx, k.Steps(), sid).Val()}
	}
	var ids []string
	for range 2 {
		info := b.enqueue(t, queue.NewRawTask("doomed", nil))
		waitFor(t, 15*time.Second, "the task dead", func() bool {
			ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
			return err == nil && ti.State == queue.StateDead
		})
		ids = append(ids, info.ID)
	}
	if got := has(ids[0]); got[0] || got[1] || got[2] {
		t.Errorf("the trimmed task still has progress, result, steps: %v", got)
	}
	if got := has(ids[1]); !got[0] || !got[1] || !got[2] {
		t.Errorf("the dead task kept lost progress, result, steps: %v", got)
	}
}
