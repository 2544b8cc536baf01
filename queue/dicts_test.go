package queue

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/sampledoc"
)

// TestDictionaryBound: a prefix stores compression dictionaries for at
// most its bound of task types, however many types producers invent (a
// dictionary never expires, so each new type grew Redis for good); a
// later type's payloads are compressed alone, by this producer and by
// another one that starts after.
func TestDictionaryBound(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	settled := func(c *Client, typ string) bool {
		c.dicts.mu.Lock()
		defer c.dicts.mu.Unlock()
		e := c.dicts.types[typ]
		return e != nil && (e.dict != nil || e.full)
	}
	// learn feeds typ's payloads to c until it has a dictionary or knows
	// it gets none
	learn := func(c *Client, typ string) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !settled(c, typ); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("type %q: no dictionary and no refusal after 30s", typ)
			}
			if _, err := c.Enqueue(ctx, NewRawTask(typ, sampledoc.JSON(r))); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.client.dicts.maxTypes = 2
	for _, typ := range []string{"a", "b", "c", "d"} {
		learn(b.client, typ)
	}
	other, err := NewClient(b.rdb, b.cfg)
	must(t, err)
	other.dicts.maxTypes = 2
	learn(other, "e")
	for _, typ := range []string{"c", "d"} {
		if !b.client.dicts.types[typ].full {
			t.Errorf("type %q got a dictionary past the bound", typ)
		}
	}
	if !other.dicts.types["e"].full {
		t.Error("a second producer stored a dictionary past the bound")
	}
	types, err := b.rdb.HLen(ctx, b.cfg.Prefix+":dicts").Result()
	must(t, err)
	stored, err := b.rdb.Keys(ctx, b.cfg.Prefix+":dict:*").Result()
	must(t, err)
	if types != 2 || len(stored) != 2 {
		t.Fatalf("%d types and %d dictionaries stored, want 2 of each", types, len(stored))
	}
}
