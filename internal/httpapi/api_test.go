package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

const token = "t0ken"

// rig is an API over a private redis-server.
type rig struct {
	rdb  *redis.Client
	qcfg queue.Config
	srv  *httptest.Server
}

func newRig(t *testing.T, opts Options) *rig {
	t.Helper()
	rs := redistest.Start(t)
	rdb := rs.Client(t)
	qcfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	if opts.Token == "" {
		opts.Token = token
	}
	h, err := New(client, insp, opts)
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &rig{rdb: rdb, qcfg: qcfg, srv: srv}
}

// call sends body (a JSON text, or "" for none) and decodes the answer
// into out, unless nil; it returns the status.
func (r *rig) call(t *testing.T, method, path, body string, out any, header ...string) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.srv.URL+path, rd)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	must(t, err)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d, body %q: %v", method, path, res.StatusCode, b, err)
		}
	}
	return res.StatusCode
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNewRefusesEmptyToken: no token never means no authentication.
func TestNewRefusesEmptyToken(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called
	defer rdb.Close()
	client, err := queue.NewClient(rdb, queue.Config{})
	must(t, err)
	insp, err := queue.NewInspector(rdb, queue.Config{})
	must(t, err)
	for _, tok := range []string{"", " ", "\t\n"} {
		if _, err := New(client, insp, Options{Token: tok}); !errors.Is(err, ErrInvalid) {
			t.Errorf("token %q: %v, want ErrInvalid", tok, err)
		}
	}
	for _, o := range []Options{{Token: "x", MaxBodyBytes: -1}, {Token: "x", MaxBatch: 10_001}, {Token: "x", MaxInFlight: -1}} {
		if _, err := New(client, insp, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
}

// TestAuth: a request without the token, or with another, is 401 and
// reads nothing; the scheme's name is case-insensitive.
func TestAuth(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	for _, h := range []string{"", "Bearer", "Bearer nope", "Basic " + token, "Bearer " + token + "x"} {
		req, _ := http.NewRequest("GET", r.srv.URL+"/v1/openapi.json", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || bytes.Contains(b, []byte(token)) || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %s", h, res.StatusCode, b)
		}
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "bearer "+token)
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("lowercase scheme: %d", res.StatusCode)
	}
}

// TestEnqueueRunsOnce: tasks enqueued over HTTP, plain, delayed, grouped,
// kept and unique, each run once by a Go worker with the payload sent,
// their results read back; a repeated Idempotency-Key answers the first
// task, and a duplicate unique task is 409.
func TestEnqueueRunsOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	ctx := context.Background()
	var mu sync.Mutex
	runs := map[string]int{}
	payloads := map[string]string{}
	mux := worker.NewMux()
	mux.HandleFunc("echo", func(ctx context.Context, task *worker.Task) error {
		mu.Lock()
		runs[task.ID]++
		payloads[task.ID] = string(task.Payload)
		mu.Unlock()
		var p struct {
			N int `json:"n"`
		}
		if err := task.Decode(&p); err != nil {
			return err
		}
		return task.SetResult(ctx, []byte(`{"twice":`+strings.Repeat("", 0)+itoa(2*p.N)+`}`))
	})
	srv, err := worker.NewServer(r.rdb, worker.Config{Config: r.qcfg, Queues: map[string]int{"q": 1}}, mux)
	must(t, err)
	must(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	bodies := map[string]string{
		"plain":   `{"type":"echo","payload":{"n":1},"retention_ms":60000}`,
		"delayed": `{"type":"echo","payload":{"n":2},"delay_ms":300,"retention_ms":60000}`,
		"grouped": `{"type":"echo","payload":{"n":3},"group":"tenant-a","headers":{"trace":"x"},"retention_ms":60000}`,
		"unique":  `{"type":"echo","payload":{"n":4},"unique":{"id":"order-4","ttl_ms":60000},"retention_ms":60000}`,
	}
	ids := map[string]string{}
	for name, body := range bodies {
		var info taskInfo
		if code := r.call(t, "POST", "/v1/queues/q/tasks", body, &info); code != http.StatusCreated || info.ID == "" || info.Queue != "q" {
			t.Fatalf("%s: %d %+v", name, code, info)
		}
		ids[name] = info.ID
	}
	var dup taskInfo
	if code := r.call(t, "POST", "/v1/queues/q/tasks", `{"type":"echo","payload":{"n":5},"retention_ms":60000}`, &dup, "Idempotency-Key", "req-5"); code != http.StatusCreated {
		t.Fatalf("first with Idempotency-Key: %d", code)
	}
	var again taskInfo
	if code := r.call(t, "POST", "/v1/queues/q/tasks", `{"type":"echo","payload":{"n":6}}`, &again, "Idempotency-Key", "req-5"); code != http.StatusOK || !again.Duplicate || again.ID != "req-5" {
		t.Fatalf("repeated Idempotency-Key: %d %+v", code, again)
	}
	ids["idempotent"] = "req-5"
	// in a queue no worker serves, so that the first holds its lock
	for i, want := range []int{http.StatusCreated, http.StatusConflict} {
		var e apiError
		if code := r.call(t, "POST", "/v1/queues/idle/tasks", `{"type":"echo","payload":{"n":7},"unique":{"id":"order-7","ttl_ms":60000}}`, &e); code != want ||
			(i == 1 && e.Error.Code != "duplicate_unique_task") {
			t.Fatalf("unique task %d: %d %+v, want %d", i+1, code, e, want)
		}
	}
	want := map[string]int{"plain": 2, "delayed": 4, "grouped": 6, "unique": 8, "idempotent": 10}
	for name, id := range ids {
		var info taskInfo
		waitFor(t, name+" succeeded", func() bool {
			return r.call(t, "GET", "/v1/queues/q/tasks/"+id, "", &info) == http.StatusOK && info.State == "succeeded"
		})
		var res struct {
			Twice int `json:"twice"`
		}
		if err := json.Unmarshal(info.Result, &res); err != nil || res.Twice != want[name] {
			t.Fatalf("%s: result %s, want twice %d", name, info.Result, want[name])
		}
		if name == "grouped" && (info.Group != "tenant-a" || info.Headers["trace"] != "x") {
			t.Fatalf("grouped: %+v", info)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for name, id := range ids {
		if runs[id] != 1 {
			t.Errorf("%s ran %d times", name, runs[id])
		}
	}
	if got := payloads[ids["plain"]]; got != `{"n":1}` {
		t.Errorf("the plain task's payload reached the handler as %q", got)
	}
	if len(runs) != len(ids) {
		t.Errorf("%d tasks ran, want %d", len(runs), len(ids))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// roundTrips counts a client's round trips to Redis.
type roundTrips struct {
	n     atomic.Int64
	mu    sync.Mutex
	names []string
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil {
			h.add(cmd.Name() + " failed: " + err.Error())
			return err
		}
		h.add(cmd.Name())
		return nil
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, c := range cmds {
			names = append(names, c.Name())
		}
		h.add(strings.Join(names, "+"))
		return next(ctx, cmds)
	}
}

func (h *roundTrips) add(name string) {
	h.n.Add(1)
	h.mu.Lock()
	h.names = append(h.names, name)
	h.mu.Unlock()
}

// TestBatch: a batch of 500 tasks is one round trip to Redis; a task
// refused in it is reported in its item and the others enqueued; a
// batch over MaxBatch enqueues nothing.
func TestBatch(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{MaxBatch: 500})
	hook := &roundTrips{}
	r.rdb.AddHook(hook)
	var parts []string
	for i := range 500 {
		parts = append(parts, `{"type":"t","payload":`+itoa(i)+`}`)
	}
	parts[7] = `{"type":"t","max_retry":-1}`
	batch := `{"tasks":[` + strings.Join(parts, ",") + `]}`
	// the client reads the queue's route and its depth limits at its first
	// calls, and Redis caches each script at its first EVAL
	for range 2 {
		if code := r.call(t, "POST", "/v1/queues/b/tasks/batch", batch, nil); code != http.StatusOK {
			t.Fatalf("warm-up: %d", code)
		}
	}
	before := hook.n.Load()
	var out struct {
		Tasks []batchItem `json:"tasks"`
	}
	if code := r.call(t, "POST", "/v1/queues/b/tasks/batch", batch, &out); code != http.StatusOK || len(out.Tasks) != 500 {
		t.Fatalf("batch: %d, %d items", code, len(out.Tasks))
	}
	if n := hook.n.Load() - before; n != 1 {
		t.Fatalf("a batch of 500 took %d round trips, want 1: %v", n, hook.names[len(hook.names)-int(n):])
	}
	for i, it := range out.Tasks {
		if (i == 7) != (it.Error != nil) || (i != 7) != (it.Task != nil) {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	if out.Tasks[7].Error.Code != "invalid" || !strings.Contains(out.Tasks[7].Error.Message, "MaxRetry") {
		t.Fatalf("the refused task's item: %+v", out.Tasks[7].Error)
	}
	var e apiError
	big := `{"tasks":[` + strings.Repeat(`{"type":"t"},`, 500) + `{"type":"t"}]}`
	if code := r.call(t, "POST", "/v1/queues/b/tasks/batch", big, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "at most 500") {
		t.Fatalf("501 tasks: %d %+v", code, e)
	}
	insp, err := queue.NewInspector(r.rdb, r.qcfg)
	must(t, err)
	if qi, err := insp.QueueInfo(context.Background(), "b"); err != nil || qi.Pending != 1497 {
		t.Fatalf("queue b: %+v, %v; want 1497 pending (499 of each batch)", qi, err)
	}
}

// TestBadRequests: each mistake is a 4xx that says what was wrong, and
// enqueues nothing.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{MaxBodyBytes: 1 << 10})
	for _, c := range []struct {
		body, header string
		status       int
		says         string
	}{
		{`{"type":"t","delay":5}`, "", 400, `unknown field "delay"`},
		{`{"payload":1}`, "", 400, "no type"},
		{`{"type":"t"} {}`, "", 400, "after the JSON value"},
		{`{"type":"t","payload":1,"payload_base64":"AA=="}`, "", 400, "not both"},
		{`{"type":"t","payload_base64":"!!"}`, "", 400, "payload_base64"},
		{`{"type":"t","delay_ms":1,"process_at":"2030-01-01T00:00:00Z"}`, "", 400, "not both"},
		{`{"type":"t","unique":{}}`, "", 400, "ttl_ms"},
		{`{"type":"bad type"}`, "", 400, "type"},
		{`{"type":"t","task_id":"a"}`, "b", 400, "differ"},
		{`{"type":"t","payload":"` + strings.Repeat("x", 2000) + `"}`, "", 413, "too large"},
		{`[`, "", 400, "bad request body"},
	} {
		var e apiError
		var h []string
		if c.header != "" {
			h = []string{"Idempotency-Key", c.header}
		}
		code := r.call(t, "POST", "/v1/queues/q/tasks", c.body, &e, h...)
		if code != c.status || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%.60s: %d %+v, want %d saying %q", c.body, code, e, c.status, c.says)
		}
	}
	var e apiError
	if code := r.call(t, "GET", "/v1/queues/q/tasks/nope", "", &e); code != http.StatusNotFound || e.Error.Code != "not_found" {
		t.Errorf("an unknown task: %d %+v", code, e)
	}
	if code := r.call(t, "DELETE", "/v1/queues/q/tasks/nope", "", &e); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("an unknown route: %d", code)
	}
	insp, err := queue.NewInspector(r.rdb, r.qcfg)
	must(t, err)
	if qs, err := insp.QueueInfos(context.Background()); err != nil || len(qs) != 0 {
		t.Fatalf("queues after bad requests only: %d, %v", len(qs), err)
	}
}

// TestInFlightBound: a request past MaxInFlight is 503 with Retry-After,
// while another holds the only slot.
func TestInFlightBound(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{MaxInFlight: 1})
	pr, pw := io.Pipe()
	held := make(chan struct{})
	go func() {
		req, _ := http.NewRequest("POST", r.srv.URL+"/v1/queues/q/tasks", pr)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		// a request that ended before its body was read must not leave
		// the writes below blocked for good: they fail instead
		pr.Close()
		close(held)
	}()
	_, _ = pw.Write([]byte(`{"type":`)) // the body is being read: the slot is held
	var got int
	waitFor(t, "a request refused for the bound", func() bool {
		req, _ := http.NewRequest("GET", r.srv.URL+"/v1/openapi.json", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		got = res.StatusCode
		return got == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "1"
	})
	_, _ = pw.Write([]byte(`"t"}`))
	pw.Close()
	<-held
	if code := r.call(t, "GET", "/v1/openapi.json", "", nil); code != http.StatusOK {
		t.Fatalf("after the slot was freed: %d", code)
	}
}

// TestOpenAPIRoutes: openapi.json describes exactly the routes served.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	must(t, json.Unmarshal(openAPI, &doc))
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	inDoc := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			inDoc[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range routes {
		served[r.method+" "+r.path] = true
		if !inDoc[r.method+" "+r.path] {
			t.Errorf("%s %s is served, and openapi.json lacks it", r.method, r.path)
		}
	}
	for op := range inDoc {
		if !served[op] {
			t.Errorf("openapi.json has %s, which is not served", op)
		}
	}
}
