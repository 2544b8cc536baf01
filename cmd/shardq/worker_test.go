package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

func TestWorkerBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ok := "--handler=t=exec:cat"
	runBadInput(t, "worker", []badInput{
		{"UnknownFlag", env, []string{"--nope"}, exitUsage, "flag provided but not defined: -nope"},
		{"NoHandlers", env, nil, exitUsage, "no handlers"},
		{"HandlerNoType", env, []string{"--handler", "=exec:cat"}, exitUsage, `--handler "=exec:cat": no task type`},
		{"HandlerKind", env, []string{"--handler", "t=ftp:x"}, exitUsage, `unknown handler kind "ftp"`},
		{"HandlerNoCommand", env, []string{"--handler", "t=exec: "}, exitUsage, "no command"},
		{"HandlerQuote", env, []string{"--handler", `t=exec:sh -c 'exit 1`}, exitUsage, "unterminated quote"},
		{"HandlerURL", env, []string{"--handler", "t=http:localhost:80/x"}, exitUsage, "want http:// or https://"},
		{"QueueName", env, []string{ok, "--queues", "good,bad name"}, exitUsage, "invalid queue name"},
		{"QueueWeight", env, []string{ok, "--queues", "a:0"}, exitUsage, `weight "0" of "a"`},
		{"QueuePattern", env, []string{ok, "--queues", "tenant:[=1"}, exitUsage, `queue pattern "tenant:["`},
		{"QueuePatternWeight", env, []string{ok, "--queues", "tenant:*=x"}, exitUsage, `weight "x" of "tenant:*"`},
		{"Concurrency", env, []string{ok, "--concurrency", "0"}, exitUsage, "--concurrency 0"},
		{"RetryExitCode", env, []string{ok, "--retry-exit-code", "0"}, exitUsage, "retry exit code 0"},
		{"LogLevel", env, []string{ok, "--log-level", "loud"}, exitUsage, "--log-level"},
		{"ConfigMissing", env, []string{"--config", "/nonexistent/shardq.json"}, exitUsage, "no such file"},
		{"ConfigUnknownField", env, []string{"--config", writeFile(t, "c.json", `{"handler": {}}`)}, exitUsage, `unknown field "handler"`},
		{"ConfigBothKinds", env, []string{"--config", writeFile(t, "c.json", `{"handlers": {"t": {"exec": ["cat"], "http": "http://x"}}}`)}, exitUsage, "exactly one of exec and http"},
		{"ConfigDuration", env, []string{"--config", writeFile(t, "c.json", `{"shutdown_timeout": 5}`)}, exitUsage, "want a string"},
		{"Prefix", env, []string{ok, "--prefix", "{x}"}, exitUsage, "--prefix"},
		{"NoRedis", nil, []string{ok}, exitUsage, "no Redis"},
		{"RedisDown", downEnv(t), []string{ok}, exitFailure, "connect to 127.0.0.1"},
	})
	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		code, out, _ := run(t, nil, "worker", "--help")
		for _, want := range []string{"-handler", "X-Shardq-Task-Id", "SHARDQ_ATTEMPT", "Exit codes:"} {
			if code != exitOK || !strings.Contains(out, want) {
				t.Fatalf("exit %d; help lacks %q:\n%s", code, want, out)
			}
		}
	})
}

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		`cat`:                                  {"cat"},
		`  sh  -c 'exit 75' `:                  {"sh", "-c", "exit 75"},
		`sh -c "echo \"hi\" $X" a\ b`:          {"sh", "-c", `echo "hi" $X`, "a b"},
		`x '' ""`:                              {"x", "", ""},
		`'it'\''s'`:                            {`it's`},
		"tab\tsep":                             {"tab", "sep"},
		`printf '%s\n' "a'b"`:                  {"printf", `%s\n`, "a'b"},
		`python3 -c "import sys; sys.exit(3)"`: {"python3", "-c", "import sys; sys.exit(3)"},
	}
	for in, want := range cases {
		got, err := splitArgs(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`'open`, `"open`, `trailing\`} {
		if _, err := splitArgs(in); err == nil {
			t.Errorf("splitArgs(%q) succeeded, want an error", in)
		}
	}
}

// enqueueAll enqueues raw tasks of the given types (one each) with opts
// and returns their IDs by type.
func enqueueAll(t *testing.T, srv *redistest.Server, payload []byte, opts []queue.Option, types ...string) map[string]string {
	t.Helper()
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, typ := range types {
		info, err := client.Enqueue(context.Background(), queue.NewRawTask(typ, payload), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ids[typ] = info.ID
	}
	return ids
}

// TestWorkerExec runs exec handlers and checks each exit maps to its
// outcome, as the Inspector records it.
func TestWorkerExec(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	dir := t.TempDir()
	p := startShardq(t, redisEnv(srv), "worker", "--queues", "default,other:2", "--concurrency", "8", "--retry-in", "1h",
		"--handler", `env=exec:sh -c 'cat > "$0/$SHARDQ_TASK_ID"; env | grep ^SHARDQ_ | sort >> "$0/$SHARDQ_TASK_ID"' `+dir,
		"--handler", "cat=exec:cat",
		"--handler", "false=exec:false",
		"--handler", `boom=exec:sh -c 'echo starting; echo "disk full on /dev/sda1" >&2; exit 3'`,
		"--handler", `temp=exec:sh -c 'echo "try later" >&2; exit 75'`,
		"--handler", "slow=exec:sleep 30",
		"--handler", "missing=exec:/nonexistent/command",
	)
	keep := []queue.Option{queue.Retention(time.Hour)}
	ids := enqueueAll(t, srv, []byte("payload: héllo\n"), append(keep, queue.In("other")), "env", "cat")
	failing := enqueueAll(t, srv, []byte("x"), []queue.Option{queue.MaxRetry(5)}, "false", "boom", "temp", "missing", "unhandled")
	last := enqueueAll(t, srv, []byte("x"), []queue.Option{queue.MaxRetry(0)}, "boom", "false")
	start := time.Now()
	slow := enqueueAll(t, srv, nil, []queue.Option{queue.MaxRetry(0), queue.Timeout(300 * time.Millisecond)}, "slow")

	t.Run("Success", func(t *testing.T) {
		waitState(t, insp, "other", ids["env"], queue.StateSucceeded)
		waitState(t, insp, "other", ids["cat"], queue.StateSucceeded)
		b, err := os.ReadFile(filepath.Join(dir, ids["env"]))
		if err != nil {
			t.Fatal(err)
		}
		want := "payload: héllo\nSHARDQ_ATTEMPT=1\nSHARDQ_QUEUE=other\nSHARDQ_TASK_ID=" + ids["env"] + "\nSHARDQ_TASK_TYPE=env\n"
		if got := withoutInherited(string(b)); got != want {
			t.Errorf("the command saw:\n%s\nwant:\n%s", got, want)
		}
		if !strings.Contains(p.stdout.String(), "payload: héllo\n") {
			t.Errorf("cat's output is not on stdout: %q", p.stdout.String())
		}
	})
	t.Run("FailureRetries", func(t *testing.T) {
		ti := waitState(t, insp, "default", failing["boom"], queue.StateRetry)
		if !strings.Contains(ti.LastError, "sh exited with 3: disk full on /dev/sda1") || strings.Contains(ti.LastError, "starting") {
			t.Errorf("LastError = %q, want the exit code and stderr (not stdout)", ti.LastError)
		}
		if d := time.Until(ti.NextProcessAt); d > time.Minute {
			t.Errorf("a failure retries with backoff, got a retry in %v", d)
		}
		ti = waitState(t, insp, "default", failing["false"], queue.StateRetry)
		if ti.LastError != "false exited with 1" {
			t.Errorf("LastError = %q", ti.LastError)
		}
		ti = waitState(t, insp, "default", failing["missing"], queue.StateRetry)
		if !strings.Contains(ti.LastError, "/nonexistent/command") {
			t.Errorf("LastError = %q", ti.LastError)
		}
		ti = waitState(t, insp, "default", failing["unhandled"], queue.StateRetry)
		if !strings.Contains(ti.LastError, `no handler for task type "unhandled"`) {
			t.Errorf("LastError = %q", ti.LastError)
		}
	})
	t.Run("TemporaryFailure", func(t *testing.T) {
		ti := waitState(t, insp, "default", failing["temp"], queue.StateRetry)
		if !strings.Contains(ti.LastError, "exited with 75 (temporary failure): try later") {
			t.Errorf("LastError = %q", ti.LastError)
		}
		if d := time.Until(ti.NextProcessAt); d < 50*time.Minute {
			t.Errorf("exit 75 with --retry-in 1h retries in %v", d)
		}
	})
	t.Run("OutOfRetries", func(t *testing.T) {
		waitState(t, insp, "default", last["boom"], queue.StateDead)
		waitState(t, insp, "default", last["false"], queue.StateDead)
	})
	t.Run("KilledAtTimeout", func(t *testing.T) {
		ti := waitState(t, insp, "default", slow["slow"], queue.StateDead)
		if !strings.Contains(ti.LastError, "sleep killed: the task's timeout or deadline passed") {
			t.Errorf("LastError = %q", ti.LastError)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the timed-out command was killed after %v", took)
		}
	})
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
	for _, want := range []string{"worker started", "queues=default:1,other:2", `msg="task failed"`, "task asked to be retried", "worker stopped",
		// the operator hears of a missing command at start and of a type
		// with no handler at its first task, once each
		`msg="handler command not found: its tasks will fail and retry until it is installed" type=missing command=/nonexistent/command`,
		`msg="no handler for task type`, "type=unhandled queue=default",
	} {
		if !strings.Contains(p.err.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, p.err.String())
		}
	}
	if n := strings.Count(p.err.String(), "handler command not found"); n != 1 {
		t.Errorf("%d warnings of a missing command, want 1 (only /nonexistent/command is missing):\n%s", n, p.err.String())
	}
	if strings.Contains(p.err.String(), "MaxRetries") {
		t.Errorf("the worker's Redis client resends commands:\n%s", p.err.String())
	}
}

// TestWorkerExecJSON: with --json a command reads msgpack payloads as JSON,
// a struct's keyed by its json tags as NewTask writes them.
func TestWorkerExecJSON(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	dir := t.TempDir()
	startShardq(t, redisEnv(srv), "worker", "--json",
		"--handler", `j=exec:sh -c 'cat > "$0/$SHARDQ_TASK_ID"' `+dir)
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type stamp struct {
		EnqueueNS int64  `json:"enqueue_ns"`
		Note      string `json:"note,omitempty"`
		Secret    string `json:"-"`
		Host      string
	}
	for payload, want := range map[any]string{
		"map":  `{"n":3,"tags":["a"],"to":"ann"}`,
		"tags": `{"Host":"h1","enqueue_ns":1764230000123456789}`,
	} {
		v := any(map[string]any{"to": "ann", "n": 3, "tags": []string{"a"}})
		if payload == "tags" {
			v = stamp{EnqueueNS: 1764230000123456789, Secret: "s", Host: "h1"}
		}
		task, err := queue.NewTask("j", v, queue.Retention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		info, err := client.Enqueue(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, insp, "default", info.ID, queue.StateSucceeded)
		b, _ := os.ReadFile(filepath.Join(dir, info.ID))
		if string(b) != want {
			t.Errorf("%s: stdin = %s, want %s", payload, b, want)
		}
	}
}

// TestWorkerShutdown: SIGINT lets a running command finish within
// --shutdown-timeout; one that runs longer is killed and its task goes
// back to pending without costing an attempt.
func TestWorkerShutdown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	p := startShardq(t, redisEnv(srv), "worker", "--shutdown-timeout", "1s",
		"--handler", `short=exec:sh -c 'touch "$0-short"; sleep 0.3' `+started,
		"--handler", `long=exec:sh -c 'touch "$0-long"; sleep 30' `+started)
	ids := enqueueAll(t, srv, nil, []queue.Option{queue.Retention(time.Hour)}, "short", "long")
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, e1 := os.Stat(started + "-short")
		_, e2 := os.Stat(started + "-long")
		if e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the commands did not start\nstderr:\n%s", p.err.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
	if took := time.Since(begin); took > 8*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	waitState(t, insp, "default", ids["short"], queue.StateSucceeded)
	ti := waitState(t, insp, "default", ids["long"], queue.StatePending)
	if ti.Attempts > 1 {
		t.Errorf("the interrupted task has %d attempts", ti.Attempts)
	}
	if !strings.Contains(p.err.String(), "shutting down") {
		t.Errorf("log lacks the shutdown:\n%s", p.err.String())
	}
}

// hook records what an HTTP handler sent.
type hook struct {
	mu   sync.Mutex
	reqs map[string]*http.Request // by task ID
	body map[string]string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs[r.Header.Get("X-Shardq-Task-Id")] = r
	h.body[r.Header.Get("X-Shardq-Task-Id")] = string(b)
	h.mu.Unlock()
	switch r.URL.Path {
	case "/ok":
	case "/busy":
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	case "/unavailable":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "/bad":
		http.Error(w, "no such customer", http.StatusUnprocessableEntity)
	default:
		http.Error(w, "database down", http.StatusInternalServerError)
	}
}

func (h *hook) get(id string) (*http.Request, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reqs[id], h.body[id]
}

// TestWorkerHTTP runs http handlers against a local server and checks
// each status maps to its outcome; one handler comes from a config file.
func TestWorkerHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	h := &hook{reqs: map[string]*http.Request{}, body: map[string]string{}}
	web := httptest.NewServer(h)
	defer web.Close()
	down := downEnv(t)["SHARDQ_REDIS_URL"][len("redis://"):]
	config := writeFile(t, "worker.json", `{
		"queues": {"hooks": 1},
		"handlers": {
			"json": {"http": "`+web.URL+`/ok", "json": true, "headers": {"Authorization": "Bearer s3cret"}},
			"ok": {"http": "http://127.0.0.1:1/overridden"}
		}}`)
	p := startShardq(t, redisEnv(srv), "worker", "--config", config, "--retry-in", "2h",
		"--handler", "ok=http:"+web.URL+"/ok",
		"--handler", "busy=http:"+web.URL+"/busy",
		"--handler", "unavailable=http:"+web.URL+"/unavailable",
		"--handler", "bad=http:"+web.URL+"/bad",
		"--handler", "err=http:"+web.URL+"/err",
		"--handler", "down=http:http://"+down+"/x",
	)
	opts := []queue.Option{queue.In("hooks"), queue.Retention(time.Hour), queue.MaxRetry(3)}
	ids := enqueueAll(t, srv, []byte{0x00, 0xff, 'x'}, opts, "ok", "busy", "unavailable", "bad", "err", "down")
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := queue.NewTask("json", struct {
		Order int `json:"order_id"`
	}{42})
	info, err := client.Enqueue(context.Background(), task, opts...)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Success", func(t *testing.T) {
		waitState(t, insp, "hooks", ids["ok"], queue.StateSucceeded)
		r, body := h.get(ids["ok"])
		if body != "\x00\xffx" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/octet-stream" ||
			r.Header.Get("X-Shardq-Task-Type") != "ok" || r.Header.Get("X-Shardq-Attempt") != "1" ||
			r.Header.Get("X-Shardq-Queue") != "hooks" {
			t.Errorf("request %s %v, body %q", r.Method, r.Header, body)
		}
	})
	t.Run("JSONFromConfig", func(t *testing.T) {
		waitState(t, insp, "hooks", info.ID, queue.StateSucceeded)
		r, body := h.get(info.ID)
		if body != `{"order_id":42}` || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer s3cret" {
			t.Errorf("request %v, body %q", r.Header, body)
		}
	})
	t.Run("RetryAfter", func(t *testing.T) {
		ti := waitState(t, insp, "hooks", ids["busy"], queue.StateRetry)
		if d := time.Until(ti.NextProcessAt); d < 55*time.Minute || d > 61*time.Minute {
			t.Errorf("429 with Retry-After: 3600 retries in %v", d)
		}
		if !strings.Contains(ti.LastError, "429 Too Many Requests") {
			t.Errorf("LastError = %q", ti.LastError)
		}
		ti = waitState(t, insp, "hooks", ids["unavailable"], queue.StateRetry)
		if d := time.Until(ti.NextProcessAt); d < 110*time.Minute {
			t.Errorf("503 without Retry-After and --retry-in 2h retries in %v", d)
		}
	})
	t.Run("ClientErrorIsDead", func(t *testing.T) {
		ti := waitState(t, insp, "hooks", ids["bad"], queue.StateDead)
		if !strings.Contains(ti.LastError, "422 Unprocessable Entity: no such customer") {
			t.Errorf("LastError = %q", ti.LastError)
		}
	})
	t.Run("ServerErrorRetries", func(t *testing.T) {
		ti := waitState(t, insp, "hooks", ids["err"], queue.StateRetry)
		if !strings.Contains(ti.LastError, "500 Internal Server Error: database down") {
			t.Errorf("LastError = %q", ti.LastError)
		}
		if d := time.Until(ti.NextProcessAt); d > time.Minute {
			t.Errorf("a 500 retries with backoff, got %v", d)
		}
		ti = waitState(t, insp, "hooks", ids["down"], queue.StateRetry)
		if !strings.Contains(ti.LastError, "connection refused") {
			t.Errorf("LastError = %q", ti.LastError)
		}
	})
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		h  string
		d  time.Duration
		ok bool
	}{
		{"", 0, false},
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{"-5", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, c := range cases {
		if d, ok := retryAfter(c.h, now); d != c.d || ok != c.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", c.h, d, ok, c.d, c.ok)
		}
	}
}

// TestConnectDisablesRetries: the binary's client never lets go-redis
// resend a command (a lost pop reply would strand its tasks until their
// lease expires), unless the URL asks for retries itself.
func TestConnectDisablesRetries(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// go-redis stores "no retries" (-1) as 0; its default is 3
	for url, want := range map[string]int{
		"redis://" + srv.Addr:                      0,
		"redis://" + srv.Addr + "/0?max_retries=5": 5,
	} {
		m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		rdb, stop, err := m.connect(context.Background(), url, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := rdb.(*redis.Client).Options().MaxRetries; got != want {
			t.Errorf("%s: MaxRetries %d, want %d", url, got, want)
		}
		stop()
	}
}

// TestWorkerConfigFile: with no flag and no environment, the config
// file's Redis, queues and handlers apply.
func TestWorkerConfigFile(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	config := writeFile(t, "worker.json", `{"redis": "redis://`+srv.Addr+`", "queues": {"jobs": 2}, "concurrency": 2,
		"shutdown_timeout": "2s", "handlers": {"t": {"exec": ["sh", "-c", "exit 9"], "retry_exit_code": 9, "retry_in": "1h"}}}`)
	p := startShardq(t, nil, "worker", "--config", config)
	ids := enqueueAll(t, srv, nil, []queue.Option{queue.In("jobs")}, "t")
	ti := waitState(t, inspector(t, srv), "jobs", ids["t"], queue.StateRetry)
	if !strings.Contains(ti.LastError, "exited with 9 (temporary failure)") || time.Until(ti.NextProcessAt) < 50*time.Minute {
		t.Errorf("task %+v", ti)
	}
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
}

// TestWorkerQueuePatterns: --queues takes patterns, and the worker runs
// the matching queues that appear after it started.
func TestWorkerQueuePatterns(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	startShardq(t, redisEnv(srv), "worker", "--queues", "tenant:*=2,jobs", "--handler", "cat=exec:cat")
	keep := []queue.Option{queue.Retention(time.Hour)}
	a := enqueueAll(t, srv, []byte("a"), append(keep, queue.In("tenant:a")), "cat")
	b := enqueueAll(t, srv, []byte("b"), append(keep, queue.In("tenant:b:eu")), "cat")
	j := enqueueAll(t, srv, []byte("j"), append(keep, queue.In("jobs")), "cat")
	waitState(t, insp, "tenant:a", a["cat"], queue.StateSucceeded)
	waitState(t, insp, "tenant:b:eu", b["cat"], queue.StateSucceeded)
	waitState(t, insp, "jobs", j["cat"], queue.StateSucceeded)
}

func TestParseQueues(t *testing.T) {
	t.Parallel()
	got, err := parseQueues("email:3, default, tenant:*=2, a:b, img-?")
	want := map[string]int{"email": 3, "default": 1, "tenant:*": 2, "a:b": 1, "img-?": 1}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("parseQueues = %v, %v; want %v", got, err, want)
	}
	queues, patterns := splitPatterns(got)
	if len(queues) != 3 || !maps.Equal(patterns, map[string]int{"tenant:*": 2, "img-?": 1}) {
		t.Fatalf("split into %v and %v", queues, patterns)
	}
}

// withoutInherited drops the lines of an exec handler's env dump that
// the test process itself has (a SHARDQ_ variable of the machine or of
// CI reaches the command through the worker's environment, as it should):
// what is left is what the worker set for the task.
func withoutInherited(dump string) string {
	own := map[string]bool{}
	for _, kv := range os.Environ() {
		own[kv] = true
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(dump, "\n") {
		if !own[strings.TrimSuffix(line, "\n")] {
			b.WriteString(line)
		}
	}
	return b.String()
}
