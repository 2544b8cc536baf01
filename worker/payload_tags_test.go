package worker

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// stamp is a payload tagged for JSON: a renamed field, an omitempty one
// and one JSON leaves out (issue 44).
type stamp struct {
	EnqueueNS int64  `json:"enqueue_ns"`
	Note      string `json:"note,omitempty"`
	Secret    string `json:"-"`
	Host      string
}

// TestPayloadJSONTagNames: a struct NewTask encodes reaches worker.Typed
// and Task.Decode whole, keyed by its json tags; one 0.1.0 encoded (field
// names: msgpack.Marshal) reaches them as the same value; and a step's
// value of the type comes back on the retry.
func TestPayloadJSONTagNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := stamp{EnqueueNS: 1764230000123456789, Secret: "kept by 0.1.0", Host: "h1"}
	old, err := msgpack.Marshal(v) // how 0.1.0's NewTask encoded it
	must(t, err)
	typed := make(chan stamp, 2)
	decoded := make(chan stamp, 2)
	keys := make(chan []string, 2)
	steps := make(chan stamp, 1)
	mux := NewMux()
	mux.Handle("typed", Typed(func(ctx context.Context, task *Task, s stamp) error {
		typed <- s
		return nil
	}))
	mux.HandleFunc("decode", func(ctx context.Context, task *Task) error {
		var s stamp
		if err := task.Decode(&s); err != nil {
			return SkipRetry(err)
		}
		var m map[string]any
		if err := wire.Unmarshal(task.Payload, &m); err != nil {
			return SkipRetry(err)
		}
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		keys <- k
		decoded <- s
		return nil
	})
	mux.HandleFunc("step", func(ctx context.Context, task *Task) error {
		s, err := Step(ctx, "stamp", func(ctx context.Context) (stamp, error) {
			return stamp{EnqueueNS: int64(task.Attempt), Note: "first"}, nil
		})
		if err != nil {
			return err
		}
		if task.Attempt == 1 {
			return RetryIn(time.Millisecond, errors.New("again"))
		}
		steps <- s
		return nil
	})
	b.server(t, Config{}, mux)
	for _, typ := range []string{"typed", "decode"} {
		now, err := queue.NewTask(typ, v)
		must(t, err)
		b.enqueue(t, now)
		// a msgpack.RawMessage is written as it is: 0.1.0's bytes
		was, err := queue.NewTask(typ, msgpack.RawMessage(old))
		must(t, err)
		b.enqueue(t, was)
	}
	step, err := queue.NewTask("step", nil)
	must(t, err)
	b.enqueue(t, step)

	wantNow := v
	wantNow.Secret = "" // json:"-" is not written
	for name, ch := range map[string]chan stamp{"Typed": typed, "Decode": decoded} {
		var got []stamp
		for range 2 {
			select {
			case s := <-ch:
				got = append(got, s)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: %d of 2 tasks ran", name, len(got))
			}
		}
		if !slices.Contains(got, wantNow) || !slices.Contains(got, v) {
			t.Errorf("%s got %+v, want %+v (NewTask's) and %+v (0.1.0's)", name, got, wantNow, v)
		}
	}
	seen := [][]string{<-keys, <-keys}
	if !slices.ContainsFunc(seen, func(k []string) bool { return slices.Equal(k, []string{"Host", "enqueue_ns"}) }) {
		t.Errorf("payload keys %q, want [Host enqueue_ns] for NewTask's", seen)
	}
	select {
	case s := <-steps:
		if want := (stamp{EnqueueNS: 1, Note: "first"}); !reflect.DeepEqual(s, want) {
			t.Errorf("the retry's step value %+v, want the first attempt's %+v", s, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the step's task never finished")
	}
}
