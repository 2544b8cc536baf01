package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/logging"
	"github.com/shardq/shardq/queue"
)

// TestUnknownKeyWarned: tasks encrypted with a key the worker's ring
// lacks go to dead, and the worker says so, naming the task type and the
// key ID, throttled: 40 such tasks once went to dead with nothing
// logged. A worker with no ring at all says that instead.
func TestUnknownKeyWarned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	producer, insp, _ := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k2") })
	var ids []string
	for range 40 {
		info, err := producer.Enqueue(ctx, queue.NewRawTask("invoice", []byte("sealed")))
		must(t, err)
		ids = append(ids, info.ID)
	}
	for _, ring := range []*queue.KeyRing{ringOf("k1"), nil} {
		var buf syncBuffer
		cfg := b.qcfg
		cfg.KeyRing = ring
		cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		s := startServer(t, b.rdb, Config{Config: cfg}, newRecorder(nil))
		waitFor(t, 20*time.Second, "40 tasks dead", func() bool {
			page, err := insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateDead, Limit: 100})
			return err == nil && len(page.Tasks) == 40
		})
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = s.Shutdown(sctx)
		cancel()
		out := buf.String()
		want := "encrypted with a key this worker's ring lacks"
		if ring == nil {
			want = "this worker has no key ring"
		}
		n := strings.Count(out, want)
		if n == 0 || n > logging.Burst || !strings.Contains(out, "type=invoice") || !strings.Contains(out, "key=k2") {
			t.Fatalf("ring %v: %d warnings, want 1 to %d naming the type and the key:\n%s", ring, n, logging.Burst, out)
		}
		for _, id := range ids { // run again, under the next worker
			must(t, insp.RunTask(ctx, queue.DefaultQueue, id))
		}
	}
}
