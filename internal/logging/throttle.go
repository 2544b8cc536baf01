// Package logging shapes what shardq logs: repeated warnings are
// throttled, and go-redis's own lines go through the configured logger.
package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Window and Burst bound a repeated warning: at most Burst lines of one
// message (and level) per Window. The first line after a window that
// dropped some says how many, in the attribute "repeated".
const (
	Window = 10 * time.Second
	Burst  = 5
)

// maxKeys bounds the messages a throttle remembers: messages that vary
// (go-redis formats addresses into its own) must not grow it without end.
const maxKeys = 1024

// Throttle returns l with its warnings and errors throttled (Window,
// Burst); lines below Warn pass untouched. A logger Throttle already
// returned comes back as it is, so a config filled twice is wrapped once.
func Throttle(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*throttle); ok {
		return l
	}
	return slog.New(newThrottle(l.Handler(), Window, Burst, time.Now))
}

// throttle is the slog.Handler of Throttle. Handlers made by WithAttrs
// and WithGroup share its counts.
type throttle struct {
	inner slog.Handler
	c     *counts
}

func newThrottle(h slog.Handler, window time.Duration, burst int, now func() time.Time) *throttle {
	return &throttle{inner: h, c: &counts{window: window, burst: burst, now: now, seen: map[string]*count{}}}
}

func (h *throttle) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *throttle) WithAttrs(as []slog.Attr) slog.Handler {
	return &throttle{inner: h.inner.WithAttrs(as), c: h.c}
}

func (h *throttle) WithGroup(name string) slog.Handler {
	return &throttle{inner: h.inner.WithGroup(name), c: h.c}
}

func (h *throttle) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.inner.Handle(ctx, r)
	}
	dropped, ok := h.c.allow(r.Level.String() + "\x00" + r.Message)
	if !ok {
		return nil
	}
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", dropped))
	}
	return h.inner.Handle(ctx, r)
}

// counts are the lines of each message within its window.
type counts struct {
	window time.Duration
	burst  int
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]*count
}

type count struct {
	start   time.Time // the window's
	lines   int       // written in it
	dropped int       // not written in it
}

// allow reports whether a line of key may be written now, and how many
// lines of key its window before dropped, to be told with it.
func (c *counts) allow(key string) (dropped int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	e := c.seen[key]
	if e == nil || now.Sub(e.start) >= c.window {
		if e == nil && len(c.seen) >= maxKeys {
			c.prune(now)
		}
		if e != nil {
			dropped = e.dropped
		}
		c.seen[key] = &count{start: now, lines: 1}
		return dropped, true
	}
	if e.lines >= c.burst {
		e.dropped++
		return 0, false
	}
	e.lines++
	return 0, true
}

// prune forgets the messages whose window is over, or all of them when
// none is: a flood of distinct messages is not throttled then, but the
// memory stays bounded.
func (c *counts) prune(now time.Time) {
	for k, e := range c.seen {
		if now.Sub(e.start) >= c.window {
			delete(c.seen, k)
		}
	}
	if len(c.seen) >= maxKeys {
		clear(c.seen)
	}
}
