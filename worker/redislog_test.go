package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/logging"
)

// TestRedisOutageLog: while Redis is down, go-redis's own lines reach
// the worker's Config.Logger as warnings, not go-redis's stderr logger
// (a 6.6 s outage gave 33 of 93 lines that way), and no warning is
// written more than logging.Burst times in its window. Not parallel:
// go-redis has one logger per process, routed to the newest running
// worker's.
func TestRedisOutageLog(t *testing.T) {
	b := setup(t)
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cfg := Config{Concurrency: 4}
	cfg.Logger = log
	s := b.server(t, cfg, newRecorder(nil))
	start := time.Now()
	b.srv.Kill(t)
	waitFor(t, 30*time.Second, "a go-redis line in the worker's log", func() bool {
		return strings.Contains(buf.String(), "from=go-redis")
	})
	waitFor(t, 30*time.Second, "a retried call in the worker's log", func() bool {
		return strings.Contains(buf.String(), "retrying")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
	windows := int(time.Since(start)/logging.Window) + 1
	per := map[string]int{}
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			continue
		}
		_, msg, _ := strings.Cut(line, " msg=")
		if quoted := strings.HasPrefix(msg, `"`); quoted {
			msg = msg[:strings.Index(msg[1:], `"`)+2]
		} else {
			msg, _, _ = strings.Cut(msg, " ")
		}
		per[msg]++
	}
	for msg, n := range per {
		if n > windows*logging.Burst {
			t.Errorf("warning %s written %d times in %d windows, want at most %d a window", msg, n, windows, logging.Burst)
		}
	}
	t.Logf("warnings written while Redis was down: %v", per)
}
