package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestPoisonedPayloadGoesDead: a msgpack payload whose header claims more
// than its bytes hold (issue 42: 5 bytes that claim 2^32-1 elements) goes
// to dead as malformed, with why naming the length, and its handler never
// runs; before, the handler's decode ended the worker with every task it
// ran. The worker runs every other task, before and after, and handlers
// that decode their payload themselves with msgpack are safe too.
func TestPoisonedPayloadGoesDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	poisons := map[string]msgpack.RawMessage{
		"claims 4294967295 elements": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"claims 100000000 entries":   {0xdf, 0x05, 0xf5, 0xe1, 0x00},
		"claims 4294967295 bytes":    {0x81, 0xa1, 'b', 0xc6, 0xff, 0xff, 0xff, 0xff},
		"nests deeper than 10000":    msgpack.RawMessage(append([]byte(strings.Repeat("\x91", 10_001)), 0)),
	}
	ids := map[string]string{}
	for want, p := range poisons {
		// queue.NewTask refuses such bytes: written in Redis, as a producer
		// outside Go could leave them
		task, err := queue.NewTask("decode", "placeholder")
		must(t, err)
		ids[want] = b.enqueue(t, task, queue.Retention(time.Hour)).ID
		redistest.SetPayload(t, b.rdb, b.qcfg.Prefix, queue.DefaultQueue, ids[want], p)
	}
	good := func() string {
		task, err := queue.NewTask("decode", map[string]any{"n": 1, "list": []int{1, 2}})
		must(t, err)
		return b.enqueue(t, task, queue.Retention(time.Hour)).ID
	}
	before := good()
	rec := newRecorder(func(_ context.Context, t *Task) error {
		var v any
		if err := t.Decode(&v); err != nil {
			return err
		}
		var m map[string][]int // as a handler that skips Task.Decode would
		_ = msgpack.Unmarshal(t.Payload, &m)
		return nil
	})
	b.server(t, Config{Concurrency: 4}, rec)
	for want, id := range ids {
		ti := waitDead(t, b.insp, id)
		if !ti.Malformed || !strings.Contains(ti.LastError, want) || !strings.Contains(ti.LastError, "malformed") {
			t.Errorf("dead task: malformed %v, last error %q; want %q", ti.Malformed, ti.LastError, want)
		}
		if ti.Attempts != 1 || rec.count(id) != 0 {
			t.Errorf("poisoned task: %d attempts, handler ran %d times; want one attempt, no run", ti.Attempts, rec.count(id))
		}
		if err := ti.Decode(new(any)); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("TaskInfo.Decode: %v, want ErrMalformed", err)
		}
	}
	after := good()
	waitFor(t, 10*time.Second, "the good tasks run", func() bool { return rec.count(before) == 1 && rec.count(after) == 1 })
}

// waitDead waits until task id of the default queue is dead and returns
// it.
func waitDead(t *testing.T, insp *queue.Inspector, id string) *queue.TaskInfo {
	t.Helper()
	var ti *queue.TaskInfo
	waitFor(t, 15*time.Second, "task "+id+" dead", func() bool {
		var err error
		ti, err = insp.GetTask(context.Background(), queue.DefaultQueue, id)
		return err == nil && ti.State == queue.StateDead
	})
	return ti
}

// TestTimestampPayloadRewritten: a payload holding a timestamp whose body
// reads as a map header (a valid time; decoded into a map it made a map
// of 2^32-1 entries) runs, its handler handed the same instant in the
// 12-byte form, which its own msgpack.Unmarshal cannot misread.
func TestTimestampPayloadRewritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	trap := msgpack.RawMessage{0x81, 0xa2, 'a', 't', 0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}
	var want struct {
		At time.Time `msgpack:"at"`
	}
	must(t, msgpack.Unmarshal(trap, &want))
	task, err := queue.NewTask("ts", trap)
	must(t, err)
	info := b.enqueue(t, task, queue.Retention(time.Hour))
	got := make(chan time.Time, 1)
	b.server(t, Config{}, newRecorder(func(_ context.Context, t *Task) error {
		var m struct {
			At map[string]any `msgpack:"at"` // made of the size a map header claims
		}
		if msgpack.Unmarshal(t.Payload, &m) == nil {
			return errors.New("a time decoded as a map")
		}
		var v struct {
			At time.Time `msgpack:"at"`
		}
		if err := t.Decode(&v); err != nil {
			return err
		}
		got <- v.At
		return nil
	}))
	select {
	case at := <-got:
		if !at.Equal(want.At) {
			t.Fatalf("handler got %v, want %v", at, want.At)
		}
	case <-time.After(15 * time.Second):
		ti, _ := b.insp.GetTask(context.Background(), queue.DefaultQueue, info.ID)
		t.Fatalf("the handler did not run: %+v", ti)
	}
}

// TestPoisonedStepValue: a step value whose header claims more than its
// bytes hold (written to Redis) is an error of Step, not the end of the
// worker; Inspector.GetTask shows the task; a steps record that does not
// walk marks the task malformed rather than failing GetTask.
func TestPoisonedStepValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	info := b.enqueue(t, queue.NewRawTask("steps", []byte("{}")), queue.Retention(time.Hour), queue.MaxRetry(0))
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	steps, err := wire.EncodeSteps(wire.Steps{{Name: "charge", At: time.Now().UnixMilli(), Result: []byte{0xdd, 0xff, 0xff, 0xff, 0xff}}})
	must(t, err)
	must(t, b.rdb.HSet(ctx, k.Steps(), wire.StoredID(info.ID), steps).Err())
	stepErr := make(chan error, 1)
	b.server(t, Config{}, newRecorder(func(ctx context.Context, t *Task) error {
		_, err := Step(ctx, "charge", func(context.Context) ([]any, error) { return nil, errors.New("ran again") })
		stepErr <- err
		return err
	}))
	select {
	case err := <-stepErr:
		if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "claims 4294967295 elements") {
			t.Fatalf("Step: %v, want ErrMalformed naming the length", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler did not run")
	}
	ti := waitDead(t, b.insp, info.ID)
	if len(ti.Steps) != 1 || ti.Malformed {
		t.Fatalf("GetTask: %d steps, malformed %v", len(ti.Steps), ti.Malformed)
	}
	if err := ti.Steps[0].Decode(new(any)); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("StepInfo.Decode: %v", err)
	}
	// the steps record itself: an array claiming 2^32-1 steps
	must(t, b.rdb.HSet(ctx, k.Steps(), wire.StoredID(info.ID), []byte{0xdd, 0xff, 0xff, 0xff, 0xff}).Err())
	ti, err = b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	must(t, err)
	if !ti.Malformed || !strings.Contains(ti.LastError, "claims 4294967295 elements") {
		t.Fatalf("GetTask of bad steps: malformed %v, last error %q", ti.Malformed, ti.LastError)
	}
}

// TestPatternRegistryCountBounded: a worker serving queues by pattern
// reads each queue's partition count from the registry; a count of 2e9
// there (written by hand, or garbled) once made it start 2e9 fetchers.
// Now such a count is none: it serves the queue's configured count.
func TestPatternRegistryCountBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.enqueue(t, queue.NewRawTask("t", nil), queue.In("tenant:huge"))
	must(t, b.rdb.HSet(ctx, keys.Queues(b.qcfg.Prefix), "tenant:huge", "2000000000").Err())
	h := &byQueue{}
	s := b.server(t, Config{QueuePatterns: map[string]int{"tenant:*": 1}, QueueRefresh: 100 * time.Millisecond}, h)
	waitFor(t, 20*time.Second, "the task of tenant:huge run", func() bool { return h.count("tenant:huge") == 1 })
	if got := s.engine.Queues(); got["tenant:huge"] != 1 {
		t.Fatalf("served %v", got)
	}
}
