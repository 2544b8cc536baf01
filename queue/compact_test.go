package queue

import (
	"context"
	"testing"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
)

// storedMessages returns the messages in partition 0's pending shards of
// queue q, by task ID.
func storedMessages(t *testing.T, b *bundle, q string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	k := keys.For(b.cfg.Prefix, q, 0)
	shards, err := b.rdb.Keys(ctx, k.ShardPrefix()+"*").Result()
	must(t, err)
	keyed, err := b.rdb.Keys(ctx, k.T+":fq:*").Result() // the keys' lists
	must(t, err)
	turns, err := b.rdb.Keys(ctx, k.T+":fo:*").Result() // the turns' lists
	must(t, err)
	shards = append(append(shards, keyed...), turns...)
	out := map[string][]byte{}
	for _, shard := range shards {
		items, err := b.rdb.LRange(ctx, shard, 0, -1).Result()
		must(t, err)
		for _, m := range items {
			if id, ok := wire.HeadID(m); ok {
				out[wire.PublicID(id)] = []byte(m)
			}
		}
	}
	return out
}

// TestCompactMessages: a plain task, by Enqueue or EnqueueMany, raw or
// msgpack, is stored in the compact form, 5 bytes shorter; a task with
// any option the form leaves out is stored in full; Config.FullMessages
// stores every task in full. Tasks of both forms read back alike through
// GetTask and ListTasks, with and without filters, and the inspector deletes one of each.
func TestCompactMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	full, err := NewClient(b.rdb, Config{Prefix: b.cfg.Prefix, FullMessages: true})
	must(t, err)
	type payload struct{ N int }
	msgpackTask, err := NewTask("compact:msgpack", payload{N: 7})
	must(t, err)

	enqueue := func(c *Client, task *Task, opts ...Option) *TaskInfo {
		t.Helper()
		info, err := c.Enqueue(ctx, task, append(opts, In("cq"))...)
		must(t, err)
		return info
	}
	compact := map[string]*TaskInfo{
		"raw":     enqueue(b.client, NewRawTask("compact:raw", make([]byte, 100))),
		"msgpack": enqueue(b.client, msgpackTask),
	}
	batch, err := b.client.EnqueueMany(ctx, []*Task{NewRawTask("compact:batch", []byte("in a batch"))}, In("cq"))
	must(t, err)
	compact["batch"] = batch[0]
	fullForm := map[string]*TaskInfo{
		"keyed":        enqueue(b.client, NewRawTask("full:keyed", []byte("k")), Group("tenant-1")),
		"retries":      enqueue(b.client, NewRawTask("full:retries", []byte("r")), MaxRetry(2)),
		"timeout":      enqueue(b.client, NewRawTask("full:timeout", []byte("t")), Timeout(1e9)),
		"header":       enqueue(b.client, NewRawTask("full:header", []byte("h")), Headers(map[string]string{"tenant": "a"})),
		"caller's ID":  enqueue(b.client, NewRawTask("full:id", []byte("i")), TaskID("order-7")),
		"FullMessages": enqueue(full, NewRawTask("compact:raw", make([]byte, 100))),
	}

	stored := storedMessages(t, b, "cq")
	for name, info := range compact {
		m := stored[info.ID]
		if len(m) == 0 || (m[0] != 0x91 && m[0] != 0x92) {
			t.Errorf("%s: stored as % x; want the compact form (0x91, 0x92)", name, m[:min(len(m), 4)])
		}
	}
	for name, info := range fullForm {
		if m := stored[info.ID]; len(m) == 0 || m[0] < 0x93 || m[0] > 0x9d {
			t.Errorf("%s: stored as % x; want the full form", name, m[:min(len(m), 4)])
		}
	}
	if c, f := stored[compact["raw"].ID], stored[fullForm["FullMessages"].ID]; len(f)-len(c) != 5 {
		t.Errorf("the same plain task is %d bytes compact, %d in full; want 5 less", len(c), len(f))
	}

	for name, info := range map[string]*TaskInfo{"raw": compact["raw"], "msgpack": compact["msgpack"], "full": fullForm["FullMessages"], "keyed": fullForm["keyed"]} {
		got, err := b.insp.GetTask(ctx, "cq", info.ID)
		if err != nil || got.State != StatePending || got.Type != info.Type || string(got.Payload) != string(info.Payload) ||
			got.Raw != info.Raw || got.MaxRetry != info.MaxRetry || got.Group != info.Group || !got.EnqueuedAt.Equal(info.EnqueuedAt) {
			t.Errorf("%s: GetTask = %+v, %v; enqueued %+v", name, got, err, info)
		}
	}
	var decoded payload
	got, err := b.insp.GetTask(ctx, "cq", compact["msgpack"].ID)
	must(t, err)
	if got.Raw || got.MaxRetry != config.DefaultMaxRetry || got.Decode(&decoded) != nil || decoded.N != 7 {
		t.Errorf("msgpack payload read back: raw %v, max retry %d, decoded %+v", got.Raw, got.MaxRetry, decoded)
	}

	page, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "cq", State: StatePending, Limit: 100})
	must(t, err)
	if len(page.Tasks) != len(compact)+len(fullForm) {
		t.Errorf("ListTasks(pending) = %d tasks, want %d", len(page.Tasks), len(compact)+len(fullForm))
	}
	found, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "cq", State: StatePending, Type: "compact:*"})
	must(t, err)
	if len(found.Tasks) != 4 { // raw, msgpack, batch and the full client's raw
		t.Errorf("ListTasks(Type compact:*) found %d tasks, want 4", len(found.Tasks))
	}

	for _, id := range []string{compact["raw"].ID, fullForm["FullMessages"].ID} {
		must(t, b.insp.DeleteTask(ctx, "cq", id))
		if _, err := b.insp.GetTask(ctx, "cq", id); err == nil {
			t.Errorf("task %s still found after DeleteTask", id)
		}
	}
	qi, err := b.insp.QueueInfo(ctx, "cq")
	must(t, err)
	if want := int64(len(compact) + len(fullForm) - 2); qi.Pending != want {
		t.Errorf("pending after two deletes = %d, want %d", qi.Pending, want)
	}
}

// TestCompactMaxRetryIsTheDefault: the compact form stands for the
// default MaxRetry, so a plain task is compact; were the default to
// change without the form, every plain task would be written in full.
func TestCompactMaxRetryIsTheDefault(t *testing.T) {
	if config.DefaultMaxRetry != wire.CompactMaxRetry {
		t.Fatalf("DefaultMaxRetry %d, the compact form's %d", config.DefaultMaxRetry, wire.CompactMaxRetry)
	}
}
