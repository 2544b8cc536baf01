package queue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/wire"
)

// TestHeaders: headers set by options and by Config.ContextHeaders reach
// GetTask; a task's own win over the context's; bad or oversized headers
// are refused; a task without headers encodes exactly as before they
// existed (not a byte more).
func TestHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	ctxClient, err := NewClient(b.rdb, Config{Prefix: b.cfg.Prefix, ContextHeaders: func(context.Context) map[string]string {
		return map[string]string{"traceparent": "00-abc-def-01", "tenant": "from-context"}
	}})
	must(t, err)
	task, err := NewTask("t", 1, Headers(map[string]string{"tenant": "acme"}))
	must(t, err)
	info, err := ctxClient.Enqueue(ctx, task, Headers(map[string]string{"region": "eu"}))
	must(t, err)
	ti, err := b.insp.GetTask(ctx, DefaultQueue, info.ID)
	must(t, err)
	want := map[string]string{"traceparent": "00-abc-def-01", "tenant": "acme", "region": "eu"}
	if len(ti.Headers) != len(want) {
		t.Fatalf("headers %v, want %v", ti.Headers, want)
	}
	for k, v := range want {
		if ti.Headers[k] != v {
			t.Fatalf("headers %v, want %v", ti.Headers, want)
		}
	}
	for _, opt := range []Option{Headers(map[string]string{"": "x"}), Headers(map[string]string{"a\nb": "x"}), Headers(map[string]string{"big": strings.Repeat("x", maxHeadersSize+1)})} {
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil), opt); !errors.Is(err, ErrInvalid) {
			t.Errorf("bad header: %v, want ErrInvalid", err)
		}
	}
	// no headers: the 11-element layout, byte for byte
	m := wire.Message{ID: wire.NewID(), Type: "t", Payload: []byte("p"), EnqueuedAt: 1}
	plain, _ := m.Encode()
	m.Headers = map[string]string{}
	empty, _ := m.Encode()
	if plain[0] != 0x9b || string(plain) != string(empty) {
		t.Fatalf("a task without headers encodes as %x, want the 11-element array %x", empty[:1], plain[:1])
	}
	m.Headers = map[string]string{"k": "v"}
	with, _ := m.Encode()
	got, err := wire.DecodeMessage(with)
	if err != nil || with[0] != 0x9c || got.Headers["k"] != "v" || len(with) != len(plain)+5 {
		t.Fatalf("with one header: %x (%d bytes, plain %d), decoded %+v, %v", with[:1], len(with), len(plain), got, err)
	}
}
