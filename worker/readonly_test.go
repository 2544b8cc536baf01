package worker

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestFetcherSurvivesReadOnly: the Redis a worker runs on is demoted to a
// replica under it (REPLICAOF, as a failover does to an old master that
// comes back): the fetchers' blocked pops end with UNBLOCKED, and every
// later pop and heartbeat gets READONLY. The fetchers log and retry, and
// once the node is a master again (REPLICAOF NO ONE) they run what is
// enqueued to it.
func TestFetcherSurvivesReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := redistest.Start(t)
	ctx := context.Background()
	var logs syncBuffer
	cfg := Config{Concurrency: 2, Heartbeat: 200 * time.Millisecond, Lease: time.Second}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	rec := newRecorder(nil)
	b.server(t, cfg, rec)
	b.enqueue(t, queue.NewRawTask("t", nil))
	waitFor(t, 10*time.Second, "the first task", func() bool { return rec.total() == 1 })
	time.Sleep(1200 * time.Millisecond) // the fetcher blocks in a slice

	must(t, b.rdb.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port)).Err())
	waitFor(t, 10*time.Second, "READONLY to be met", func() bool {
		return strings.Contains(string(logs.Bytes()), "READONLY")
	})
	must(t, b.rdb.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	for range 10 {
		b.enqueue(t, queue.NewRawTask("t", nil))
	}
	waitFor(t, 20*time.Second, "the tasks to run after the promotion", func() bool { return rec.total() == 11 })
	out := string(logs.Bytes())
	t.Logf("errors met: UNBLOCKED %v, READONLY %d times", strings.Contains(out, "UNBLOCKED"), strings.Count(out, "READONLY"))
}
