package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/redact"
	"github.com/shardq/shardq/worker"
)

// builtin is the handler `shardq worker` runs for one task type: a
// command (exec) or a URL (http).
type builtin struct {
	resolved
	log    *slog.Logger
	stdout io.Writer    // where commands' standard output goes
	client *http.Client // for http handlers
}

// ProcessTask hands the task to the command or URL and maps the result to
// the task's fate.
func (b *builtin) ProcessTask(ctx context.Context, t *worker.Task) error {
	start := time.Now()
	body, contentType := t.Payload, "application/octet-stream"
	if b.json && !t.Raw {
		j, err := msgpackToJSON(t.Payload)
		if err != nil {
			return b.logged(ctx, t, start, worker.SkipRetry(err))
		}
		body, contentType = j, "application/json"
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, b.timeout, fmt.Errorf("handler timeout (%v)", b.timeout))
		defer cancel()
	}
	var err error
	if b.url != "" {
		err = b.post(ctx, t, body, contentType)
	} else {
		err = b.runCommand(ctx, t, body)
	}
	return b.logged(ctx, t, start, err)
}

// logged logs what became of the task and returns err.
func (b *builtin) logged(ctx context.Context, t *worker.Task, start time.Time, err error) error {
	attrs := []any{"task", t.ID, "type", t.Type, "queue", t.Queue, "attempt", t.Attempt,
		"took", time.Since(start).Round(time.Millisecond)}
	var temp *tempError
	switch {
	case err == nil:
		b.log.Debug("task succeeded", attrs...)
	case errors.Is(context.Cause(ctx), worker.ErrShutdown):
		b.log.Info("task interrupted by shutdown; it goes back to its queue", attrs...)
	case errors.As(err, &temp):
		b.log.Info("task asked to be retried", append(attrs, "err", err)...)
	case errors.Is(err, worker.ErrSkipRetry):
		b.log.Warn("task failed for good", append(attrs, "err", err)...)
	default:
		b.log.Warn("task failed", append(attrs, "retries_left", t.RetriesLeft(), "err", err)...)
	}
	return err
}

// tempError marks a failure the handler asked to retry: exit code 75,
// HTTP 429 or 503.
type tempError struct{ error }

func (e *tempError) Unwrap() error { return e.error }

// retry returns a requested retry of err, after d when d > 0 (else after
// the worker's backoff).
func retry(d time.Duration, err error) error {
	err = &tempError{err}
	if d > 0 {
		return worker.RetryIn(d, err)
	}
	return err
}

// killed describes why ctx ended a run: a timeout, a deadline, shutdown.
func killed(ctx context.Context) string {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.DeadlineExceeded) {
		return "the task's timeout or deadline passed"
	}
	return cause.Error()
}

// post sends the task to b.url and maps the response status.
func (b *builtin) post(ctx context.Context, t *worker.Task, body []byte, contentType string) error {
	// Messages show the URL with its secrets hidden: they become the
	// task's error, which Redis keeps and the dashboard shows.
	shown := redact.URL(b.url)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return worker.SkipRetry(errors.New(redact.Scrub(err.Error(), b.url)))
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "shardq-worker")
	req.Header.Set("X-Shardq-Task-Id", t.ID)
	req.Header.Set("X-Shardq-Task-Type", t.Type)
	req.Header.Set("X-Shardq-Attempt", strconv.Itoa(t.Attempt))
	req.Header.Set("X-Shardq-Queue", t.Queue)
	for k, v := range b.headers {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("POST %s: cancelled: %s", shown, killed(ctx))
		}
		return errors.New(redact.Scrub(err.Error(), b.url)) // `Post "URL": dial tcp ...`
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // reuse the connection
	failure := fmt.Errorf("POST %s: %s", shown, resp.Status)
	if s := strings.TrimSpace(string(snippet)); s != "" {
		failure = fmt.Errorf("POST %s: %s: %s", shown, resp.Status, s)
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return worker.RetryIn(d, &tempError{failure})
		}
		return retry(b.retryIn, failure)
	case code >= 400 && code < 500:
		return worker.SkipRetry(failure)
	default:
		return failure
	}
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// tail keeps the last max bytes written to it.
type tail struct {
	max     int
	b       []byte
	written int
}

func (w *tail) Write(p []byte) (int, error) {
	w.written += len(p)
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

// String returns the tail, trimmed, starting with "..." when it was cut.
func (w *tail) String() string {
	s := strings.TrimSpace(string(w.b))
	if w.written > w.max {
		s = "..." + s
	}
	return s
}

// lockedWriter serializes writes from concurrent commands.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
