package dicts

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/sampledoc"
)

// TestDictionaryBound: a prefix stores compression dictionaries for at
// most its bound of task types, however many types producers invent (a
// dictionary never expires, so each new type grew Redis for good); a
// later type's payloads are compressed alone, by this producer and by
// another one that starts after.
func TestDictionaryBound(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const prefix = "bound"
	r := rand.New(rand.NewPCG(7, 8))
	learner := func() *Learner {
		l := New(rdb, prefix, envelope.RedisDicts(rdb, prefix), slog.Default())
		l.maxTypes = 2
		return l
	}
	settled := func(l *Learner, typ string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		e := l.types[typ]
		return e != nil && (e.dict != nil || e.full)
	}
	// learn feeds typ's payloads to l, as a producer's enqueues do, until
	// it has a dictionary or knows it gets none
	learn := func(l *Learner, typ string) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !settled(l, typ); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("type %q: no dictionary and no refusal after 30s", typ)
			}
			l.For(typ, sampledoc.JSON(r))
		}
	}
	first := learner()
	for _, typ := range []string{"a", "b", "c", "d"} {
		learn(first, typ)
	}
	other := learner()
	learn(other, "e")
	for _, typ := range []string{"c", "d"} {
		if !first.types[typ].full {
			t.Errorf("type %q got a dictionary past the bound", typ)
		}
	}
	if !other.types["e"].full {
		t.Error("a second producer stored a dictionary past the bound")
	}
	types, err := rdb.HLen(ctx, prefix+":dicts").Result()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := rdb.Keys(ctx, prefix+":dict:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if types != 2 || len(stored) != 2 {
		t.Fatalf("%d types and %d dictionaries stored, want 2 of each", types, len(stored))
	}
}
