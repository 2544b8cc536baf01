package queue

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
)

// TestConfigMapsEveryField: Config and the engine's config.Config have the
// same fields, and engine and from carry each one over and back, so a
// field added to one and not mapped fails here rather than being dropped.
func TestConfigMapsEveryField(t *testing.T) {
	t.Parallel()
	q, e := reflect.TypeFor[Config](), reflect.TypeFor[config.Config]()
	if q.NumField() != e.NumField() {
		t.Fatalf("Config has %d fields, config.Config %d", q.NumField(), e.NumField())
	}
	for i := range q.NumField() {
		if q.Field(i).Name != e.Field(i).Name {
			t.Fatalf("field %d is %s in Config, %s in config.Config", i, q.Field(i).Name, e.Field(i).Name)
		}
	}
	ring := &KeyRing{Current: "k", Keys: map[string][]byte{"k": make([]byte, 32)}}
	c := Config{
		Prefix: "p", MaxPayloadSize: 1, ShardSize: 2, FeedSize: 3, Partitions: map[string]int{"q": 4},
		IDTTL: 5, WorkflowRetention: 6, ContextHeaders: func(context.Context) map[string]string { return nil },
		WaitReplicas: 7, WaitTimeout: 8, NoCoalescing: true, FullMessages: true, Compression: "small",
		CompressAbove: 9, KeyRing: ring, EncryptErrors: true, AllowPlaintext: true, Logger: slog.Default(),
	}
	cv := reflect.ValueOf(c)
	for i := range cv.NumField() {
		if cv.Field(i).IsZero() {
			t.Fatalf("the test leaves Config.%s zero: set it", q.Field(i).Name)
		}
	}
	n := c.engine()
	nv := reflect.ValueOf(n)
	for i := range nv.NumField() {
		if nv.Field(i).IsZero() {
			t.Errorf("engine() drops Config.%s", q.Field(i).Name)
		}
	}
	if n.KeyRing != ring.engine() || n.KeyRing.Current != "k" || n.Compression != "small" {
		t.Errorf("engine() made ring %+v and compression %v", n.KeyRing, n.Compression)
	}
	back := reflect.ValueOf(c.from(n))
	for i := range back.NumField() {
		a, b := cv.Field(i), back.Field(i)
		if a.Kind() == reflect.Func || a.Kind() == reflect.Map || a.Kind() == reflect.Pointer {
			if a.Pointer() != b.Pointer() {
				t.Errorf("from() changes Config.%s", q.Field(i).Name)
			}
			continue
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			t.Errorf("from() changes Config.%s: %v, want %v", q.Field(i).Name, b, a)
		}
	}
	c.WaitTimeout = time.Second
	if got, err := c.withDefaults(); err != nil || got.KeyRing != ring || got.Compression != "small" || got.WaitTimeout != time.Second {
		t.Fatalf("withDefaults: %+v, %v", got, err)
	}
}
