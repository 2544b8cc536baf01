package queue

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// TestTaskIDs: generated IDs are UUIDv7 text to users and 16 bytes in
// Redis; every read path shows, and every lookup takes, the public form;
// caller-chosen IDs, a 16-byte one and UUID text among them, read back
// exactly as given.
func TestTaskIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	gen, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("gen")), In("ids"))
	must(t, err)
	if u, err := uuid.Parse(gen.ID); err != nil || u.Version() != 7 || u.String() != gen.ID {
		t.Fatalf("generated ID %q: %v", gen.ID, err)
	}
	// in Redis, the message opens with the 16 bytes
	k := keys.For(b.cfg.Prefix, "ids", 0)
	head, err := b.rdb.LIndex(ctx, k.ShardPrefix()+"0", 0).Result()
	must(t, err)
	if id, ok := wire.HeadID(head); !ok || len(id) != 16 || wire.PublicID(id) != gen.ID {
		t.Fatalf("stored ID %q (%v), want the 16 bytes of %s", id, ok, gen.ID)
	}
	mine := []string{"order-42", "exactly16bytes!!", "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "ünïcødé-ïd"}
	for _, id := range mine {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(id)), In("ids"), TaskID(id), ProcessIn(time.Hour))
		must(t, err)
		if info.ID != id {
			t.Fatalf("TaskID(%q) came back as %q", id, info.ID)
		}
	}
	all := append([]string{gen.ID}, mine...)
	for _, id := range all {
		ti, err := b.insp.GetTask(ctx, "ids", id)
		if err != nil || ti.ID != id {
			t.Fatalf("GetTask(%q): %+v, %v", id, ti, err)
		}
	}
	// the listings and the feed show the public form, and their markers page on
	seen := map[string]bool{}
	marker := ""
	for {
		p, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "ids", State: StateScheduled, After: marker, Limit: 2})
		must(t, err)
		for _, ti := range p.Tasks {
			seen[ti.ID] = true
		}
		if len(p.Tasks) < 2 {
			break
		}
		marker = p.Next
	}
	feed, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "ids", Limit: 3})
	must(t, err)
	more, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "ids", After: feed.Next, Limit: 10})
	must(t, err)
	for _, ti := range append(feed.Tasks, more.Tasks...) {
		seen[ti.ID] = true
	}
	for _, id := range all {
		if !seen[id] {
			t.Errorf("%q missing from the listings and feed (saw %v)", id, seen)
		}
	}
	// actions take the public form
	for _, id := range mine[:3] {
		must(t, b.insp.RunTask(ctx, "ids", id))
	}
	must(t, b.insp.DeleteTask(ctx, "ids", mine[3]))
	if _, err := b.insp.GetTask(ctx, "ids", mine[3]); err == nil {
		t.Fatalf("%q still there after DeleteTask", mine[3])
	}
	// a chosen ID is claimed by its public form: the same text again is a duplicate
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("ids"), TaskID("exactly16bytes!!")); err == nil {
		t.Fatal("a duplicate 16-byte TaskID was accepted")
	}
}
