package queue

import (
	"context"
	"testing"

	"github.com/shardq/shardq/internal/keys"
)

// TestRegistryCountsBounded: a queue registry or layout value past the
// partition limit (written to Redis by hand, or garbled) once sized what
// the Inspector allocates: a registry value of 2e9 made QueueInfos build a
// pipeline of 2e9 commands, and the process died. Such a value counts as
// none, the queue read with its configured partitions, by QueueInfos,
// QueueInfo, Workers and GetTask alike.
func TestRegistryCountsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	for q, v := range map[string]string{"huge": "2000000000", "neg": "-5", "text": "many"} {
		if err := b.rdb.HSet(ctx, keys.Queues(b.cfg.Prefix), q, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.rdb.HSet(ctx, keys.Queues(b.cfg.Prefix), "laid", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.HSet(ctx, keys.Layout(b.cfg.Prefix), "laid", "1/2000000000").Err(); err != nil {
		t.Fatal(err)
	}
	qs, err := b.insp.QueueInfos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 4 {
		t.Fatalf("QueueInfos: %d queues, want 4", len(qs))
	}
	for _, qi := range qs {
		if qi.Partitions != 1 {
			t.Errorf("QueueInfos: %s has %d partitions, want 1", qi.Queue, qi.Partitions)
		}
		one, err := b.insp.QueueInfo(ctx, qi.Queue)
		if err != nil || one.Partitions != 1 {
			t.Errorf("QueueInfo(%s) = %+v, %v", qi.Queue, one, err)
		}
	}
	if _, err := b.insp.Workers(ctx); err != nil {
		t.Fatal(err)
	}
}
