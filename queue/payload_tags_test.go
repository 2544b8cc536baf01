package queue

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/wire"
)

// reading is a payload tagged for JSON: a renamed field, an omitempty one
// and one JSON leaves out (issue 44).
type reading struct {
	EnqueueNS int64   `json:"enqueue_ns"`
	Unit      string  `json:"unit,omitempty"`
	Cache     []byte  `json:"-"`
	Value     float64 // untagged: its name
}

// TestNewTaskJSONTagNames: NewTask keys a struct's payload by its json
// tags, and TaskInfo.Decode reads it back, as it reads the same struct
// encoded by 0.1.0 (field names), from a stored task.
func TestNewTaskJSONTagNames(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	v := reading{EnqueueNS: 1764230000123456789, Cache: []byte{1}, Value: 2.5}
	task, err := NewTask("reading", v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := wire.Unmarshal(task.Payload(), &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"Value", "enqueue_ns"}; !slices.Equal(keys, want) {
		t.Errorf("payload keys %q, want %q", keys, want)
	}
	old, err := msgpack.Marshal(v) // how 0.1.0's NewTask encoded it
	if err != nil {
		t.Fatal(err)
	}
	was, err := NewTask("reading", msgpack.RawMessage(old))
	if err != nil {
		t.Fatal(err)
	}
	wantNow := v
	wantNow.Cache = nil // json:"-" is not written
	for want, tk := range map[*reading]*Task{&wantNow: task, &v: was} {
		info, err := b.client.Enqueue(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		ti, err := b.insp.GetTask(ctx, DefaultQueue, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got reading
		if err := ti.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, *want) {
			t.Errorf("TaskInfo.Decode: %+v, want %+v", got, *want)
		}
	}
}
