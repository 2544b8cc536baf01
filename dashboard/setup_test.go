package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// env is a Redis with a queue holding tasks in every state, made by a real
// worker, and the dashboard over it, mounted under /dash.
type env struct {
	t      *testing.T
	redis  *redistest.Server
	ctx    context.Context
	rdb    *redis.Client
	client *queue.Client
	insp   *queue.Inspector
	cfg    queue.Config
	calls  *callCounter
	srv    *httptest.Server
	http   *http.Client
	q      string
	// IDs by state; evil is a dead task whose payload and error hold HTML.
	pending, active, scheduled, retry, dead, succeeded []string
	evil                                               string
	worker                                             string
}

// The script a payload carries, which must come out as text.
const evilPayload = `<script>alert("pwned")</script>`

func setup(t *testing.T, opts dashboard.Options) *env {
	t.Helper()
	e := newEnv(t)
	e.fill()
	e.serve(opts)
	return e
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	calls := &callCounter{}
	rdb.AddHook(calls)
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, cfg)
	must(t, err)
	return &env{t: t, redis: srv, ctx: context.Background(), rdb: rdb, client: client, insp: insp, cfg: cfg, calls: calls, q: "emails",
		worker: "w-" + strings.ReplaceAll(t.Name(), "/", "-")}
}

// fill runs a worker until the queue holds tasks in every state, then
// pauses the queue and adds pending tasks.
func (e *env) fill() {
	t := e.t
	release := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("die", func(context.Context, *worker.Task) error {
		return worker.SkipRetry(errors.New(`failed: <img src=x onerror="alert(1)">`))
	})
	mux.HandleFunc("retry", func(context.Context, *worker.Task) error {
		return worker.RetryIn(time.Hour, errors.New("smtp busy"))
	})
	mux.HandleFunc("block", func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("report", func(ctx context.Context, t *worker.Task) error {
		if err := t.SetProgress(ctx, 60, "halfway <b>there</b>"); err != nil {
			return err
		}
		return t.SetResult(ctx, []byte(`{"thumbnails": 3}`))
	})
	mux.HandleFunc("steps", func(ctx context.Context, t *worker.Task) error {
		if _, err := worker.Step(ctx, "charge <card>", func(context.Context) (map[string]any, error) {
			return map[string]any{"receipt": "r-<1>", "cents": 1250}, nil
		}); err != nil {
			return err
		}
		_, err := worker.Step(ctx, "mail", func(context.Context) (string, error) { return "sent", nil })
		return err
	})
	// a client of its own, so the worker's calls are not counted
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg,
		Queues: map[string]int{e.q: 1}, Concurrency: 20, WorkerID: e.worker,
		Schedules: []worker.Schedule{{Name: "nightly-digest", Spec: "0 3 * * *",
			Task: queue.NewRawTask("digest", nil), Options: []queue.Option{queue.In("reports")}}}}, mux)
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	in := queue.In(e.q)
	evil, err := queue.NewTask("die", map[string]any{"to": "ann@example.com", "html": evilPayload})
	must(t, err)
	info, err := e.client.Enqueue(e.ctx, evil, in)
	must(t, err)
	e.evil = info.ID
	e.dead = append([]string{e.evil}, e.enqueue(4, "die", in)...)
	e.retry = e.enqueue(3, "retry", in)
	e.active = e.enqueue(2, "block", in)
	e.succeeded = e.enqueue(2, "ok", in, queue.Retention(time.Hour))
	e.scheduled = e.enqueue(3, "ok", in, queue.ProcessIn(time.Hour))
	e.waitCounts("every state", func(qi *queue.QueueInfo) bool {
		return qi.Dead == 5 && qi.Retry == 3 && qi.Active == 2 && qi.Succeeded == 2 && qi.Scheduled == 3 && qi.Pending == 0
	})
	must(t, e.insp.Pause(e.ctx, e.q))
	e.pending = e.enqueue(4, "ok", in)
	// a fetcher blocked since before the pause may hold the first for a
	// moment (in its in-flight list) before it gives it back to the head
	e.waitCounts("pending", func(qi *queue.QueueInfo) bool { return qi.Pending == 4 })
}

// serve mounts the dashboard under /dash on a test server.
func (e *env) serve(opts dashboard.Options) {
	mux := http.NewServeMux()
	mux.Handle("/dash/", http.StripPrefix("/dash", newDashboard(e.t, e.insp, opts)))
	e.srv = httptest.NewServer(mux)
	e.t.Cleanup(e.srv.Close)
	e.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *env) enqueue(n int, typ string, opts ...queue.Option) []string {
	e.t.Helper()
	tasks := make([]*queue.Task, n)
	for j := range tasks {
		var err error
		tasks[j], err = queue.NewTask(typ, map[string]any{"n": j, "to": "bob@example.com"})
		must(e.t, err)
	}
	infos, err := e.client.EnqueueMany(e.ctx, tasks, opts...)
	must(e.t, err)
	ids := make([]string, n)
	for j, in := range infos {
		ids[j] = in.ID
	}
	return ids
}

func (e *env) waitCounts(what string, cond func(*queue.QueueInfo) bool) *queue.QueueInfo {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		qi, err := e.insp.QueueInfo(e.ctx, e.q)
		must(e.t, err)
		if cond(qi) {
			return qi
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s: %+v", what, qi)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) info() *queue.QueueInfo {
	e.t.Helper()
	qi, err := e.insp.QueueInfo(e.ctx, e.q)
	must(e.t, err)
	return qi
}

// response is what a request got back.
type response struct {
	code   int
	header http.Header
	body   string
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("response is not JSON (%v): %s", err, r.body)
	}
}

// do sends a request to the dashboard; path is under /dash. header is
// name, value pairs; "Host" sets the request's Host.
func (e *env) do(method, path string, body url.Values, header ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequest(method, e.srv.URL+"/dash"+path, rd)
	must(e.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for j := 0; j+1 < len(header); j += 2 {
		if header[j] == "Host" {
			req.Host = header[j+1] // the client sends req.Host, never a Host header
			continue
		}
		req.Header.Set(header[j], header[j+1])
	}
	res, err := e.http.Do(req)
	must(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	must(e.t, err)
	return response{code: res.StatusCode, header: res.Header, body: string(b)}
}

func (e *env) get(path string, header ...string) response {
	e.t.Helper()
	return e.do(http.MethodGet, path, nil, header...)
}

// csrf fetches the CSRF token from the API.
func (e *env) csrf(header ...string) string {
	e.t.Helper()
	var v struct{ Token string }
	r := e.get("/api/csrf", header...)
	if r.code != http.StatusOK {
		e.t.Fatalf("GET /api/csrf: %d %s", r.code, r.body)
	}
	r.json(e.t, &v)
	return v.Token
}

// newDashboard is dashboard.New, failing the test on an error.
func newDashboard(t testing.TB, insp *queue.Inspector, opts dashboard.Options) http.Handler {
	t.Helper()
	d, err := dashboard.New(insp, opts)
	must(t, err)
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// callCounter counts round trips to Redis, connection set-up aside.
type callCounter struct{ roundTrips atomic.Int64 }

func (h *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.roundTrips.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			h.roundTrips.Add(1)
		}
		return next(ctx, cmds)
	}
}

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}
