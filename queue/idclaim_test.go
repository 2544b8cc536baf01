package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// TestIDClaims: TaskID claims live in a few hashes per partition, not a
// key per ID; a claim refuses a duplicate for its IDTTL and lets the ID
// go after it; and a claim written by a 0.1.0 producer, a key of its own,
// still refuses a duplicate.
func TestIDClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FewKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		tasks := make([]*Task, 2000)
		for i := range tasks {
			tasks[i] = NewRawTask("t", nil, TaskID(fmt.Sprintf("order-%06d", i)))
		}
		if _, err := b.client.EnqueueMany(ctx, tasks); err != nil {
			t.Fatal(err)
		}
		k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
		claimKeys, err := b.rdb.Keys(ctx, k.IDClaims()).Result()
		must(t, err)
		// one bucket (two if it turned meanwhile), spread over many shards
		if len(claimKeys) < 500 || len(claimKeys) > 2*1024 {
			t.Fatalf("%d claim keys for 2,000 IDs, want 500 to 2,048", len(claimKeys))
		}
		fields := int64(0)
		for _, key := range claimKeys {
			fields += b.rdb.HLen(ctx, key).Val()
			if enc := b.rdb.ObjectEncoding(ctx, key).Val(); enc != "listpack" {
				t.Fatalf("claim hash %s is a %s, want a listpack", key, enc)
			}
		}
		if fields != 2000 {
			t.Fatalf("%d claims in the hashes, want 2,000", fields)
		}
		if old, _ := b.rdb.Keys(ctx, k.T+":id:*").Result(); len(old) > 0 {
			t.Fatalf("claim keys of the old form: %v", old)
		}
		_, err = b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID("order-001999")))
		if !errors.Is(err, ErrDuplicateTaskID) {
			t.Fatalf("a claimed ID enqueued again: %v", err)
		}
	})

	t.Run("ExpiresAfterIDTTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{IDTTL: 50 * time.Millisecond})
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID("short"))); err != nil {
			t.Fatal(err)
		}
		// the claim lives 50 to 75 ms: a later enqueue of the ID takes it
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID("short")))
			if err == nil {
				break
			}
			if !errors.Is(err, ErrDuplicateTaskID) || time.Now().After(deadline) {
				t.Fatalf("the ID is still claimed long after its IDTTL: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("HeldForIDTTL", func(t *testing.T) {
		t.Parallel()
		const ttl = 300 * time.Millisecond
		b := setup(t, Config{IDTTL: ttl})
		// the claim is made at or after start, by the server's clock,
		// which is this machine's: an attempt that returns before
		// start+ttl reached the server within the claim's IDTTL
		start := time.Now()
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID("held"))); err != nil {
			t.Fatal(err)
		}
		attempts := 0
		for {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID("held")))
			if time.Since(start) >= ttl {
				break
			}
			attempts++
			if !errors.Is(err, ErrDuplicateTaskID) {
				t.Fatalf("%v after the claim, within its IDTTL of %v: %v", time.Since(start), ttl, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if attempts == 0 {
			t.Fatal("no attempt within the IDTTL")
		}
	})

	t.Run("OldClaimKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
		id := "from-0.1.0"
		must(t, b.rdb.Set(ctx, k.T+":id:"+wire.StoredID(id), 1, time.Hour).Err())
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil, TaskID(id)))
		if !errors.Is(err, ErrDuplicateTaskID) || !strings.Contains(err.Error(), id) {
			t.Fatalf("an ID a 0.1.0 producer claimed: %v", err)
		}
	})
}
