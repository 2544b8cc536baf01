package logging

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// throttled returns a logger writing JSON lines to buf, throttled on a
// clock the test moves.
func throttled(buf *bytes.Buffer, now *time.Time) *slog.Logger {
	h := slog.NewJSONHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(newThrottle(h, Window, Burst, func() time.Time { return *now }))
}

// TestThrottle: within a window, a warning is written Burst times and
// then dropped; the first line after the window says how many were
// dropped. Other messages, other levels and lines below Warn are not
// held back, and loggers made With attributes share the counts.
func TestThrottle(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := throttled(&buf, &now)
	for i := range 20 {
		l.Warn("redis call failed; retrying", "attempt", i)
		l.With("queue", "q").Warn("redis call failed; retrying", "attempt", i)
		l.Info("fetched", "n", i)
	}
	l.Error("redis call failed; retrying")
	l.Warn("another warning")
	out := buf.String()
	if n := strings.Count(out, `"msg":"redis call failed; retrying"`); n != Burst+1 {
		t.Fatalf("%d lines of a warning repeated 40 times, want %d (and the error):\n%s", n, Burst+1, out)
	}
	if n := strings.Count(out, `"msg":"fetched"`); n != 20 {
		t.Fatalf("%d info lines of 20 written", n)
	}
	if !strings.Contains(out, `"msg":"another warning"`) || strings.Contains(out, "repeated") {
		t.Fatalf("another message held back, or a repeat count before the window ended:\n%s", out)
	}
	buf.Reset()
	now = now.Add(Window)
	l.Warn("redis call failed; retrying", "attempt", 99)
	if want := `"repeated":35`; !strings.Contains(buf.String(), want) {
		t.Fatalf("the first line after the window: %s, want %s", buf.String(), want)
	}
	if Throttle(Throttle(slog.Default())).Handler().(*throttle).inner != slog.Default().Handler() {
		t.Fatal("Throttle of a throttled logger wrapped it again")
	}
}

// TestThrottleBounded: a flood of distinct messages keeps at most
// maxKeys of them in memory.
func TestThrottleBounded(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := throttled(&buf, &now)
	h := l.Handler().(*throttle)
	for i := range 3 * maxKeys {
		l.Warn(fmt.Sprint("dial 10.0.0.", i, " failed"))
	}
	if n := len(h.c.seen); n > maxKeys {
		t.Fatalf("%d messages remembered, want at most %d", n, maxKeys)
	}
	if n := strings.Count(buf.String(), "\n"); n != 3*maxKeys {
		t.Fatalf("%d of %d distinct warnings written", n, 3*maxKeys)
	}
}
