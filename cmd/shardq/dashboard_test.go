package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestDashboardCommand serves the dashboard, reads the overview and the
// JSON API, then stops on its context like SIGINT would.
func TestDashboardCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	client, err := queue.NewClient(rdb, queue.Config{})
	must(t, err)
	_, err = client.Enqueue(context.Background(), queue.NewRawTask("t", nil), queue.In("mail"))
	must(t, err)

	out := &syncWriter{w: &bytes.Buffer{}}
	m := &Main{Stdout: out, Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"REDIS_URL": "redis://" + srv.Addr, "SHARDQ_DASHBOARD_TOKEN": "s3cret"}[k]
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, []string{"dashboard", "--addr", "127.0.0.1:0"}) }()
	var base string
	deadline := time.Now().Add(5 * time.Second)
	for base == "" && time.Now().Before(deadline) {
		if mm := regexp.MustCompile(`http://\S+/`).FindString(out.String()); mm != "" {
			base = mm
		}
		time.Sleep(10 * time.Millisecond)
	}
	if base == "" {
		t.Fatal("the dashboard never said where it listens")
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", base+strings.TrimPrefix(path, "/"), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/", ""); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", code)
	}
	if code, body := get("/", "s3cret"); code != 200 || !strings.Contains(body, "mail") {
		t.Fatalf("overview: %d %q", code, body[:min(len(body), 200)])
	}
	if code, body := get("/api/queues", "s3cret"); code != 200 || !strings.Contains(body, `"mail"`) {
		t.Fatalf("api: %d %q", code, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after interrupt", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// syncWriter lets a test read what a running command writes.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// serveDashboard runs shardq dashboard with args and returns the URL it
// serves ("http://127.0.0.1:port/").
func serveDashboard(t *testing.T, env map[string]string, args ...string) (string, *proc) {
	t.Helper()
	p := startShardq(t, env, append([]string{"dashboard", "--addr", "127.0.0.1:0"}, args...)...)
	re := regexp.MustCompile(`dashboard on (http://\S+/)`)
	var base string
	waitUntil(t, 30*time.Second, "the dashboard's address", func() bool {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	})
	return base, p
}

// getHost GETs url naming host in the request, with header pairs.
func getHost(t *testing.T, url, host string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	if host != "" {
		req.Host = host
	}
	for j := 0; j+1 < len(header); j += 2 {
		req.Header.Set(header[j], header[j+1])
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestDashboardHostCheck: the dashboard without credentials answers
// loopback names, its --addr host and --allowed-host only, so a page of
// another site whose name points at 127.0.0.1 cannot read it; with
// credentials it answers any host unless --allowed-host names some.
func TestDashboardHostCheck(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	base, _ := serveDashboard(t, env)
	port := base[strings.LastIndex(base, ":")+1 : len(base)-1]
	rebound := "rebind.attacker.example:" + port
	if code, body := getHost(t, base+"api/csrf", rebound, "Origin", "http://"+rebound); code != http.StatusMisdirectedRequest ||
		strings.Contains(body, "token\"") {
		t.Errorf("no auth, rebound host: %d %s, want 421", code, body)
	}
	for _, host := range []string{"", "localhost:" + port, "[::1]:" + port} {
		if code, body := getHost(t, base+"api/csrf", host); code != 200 {
			t.Errorf("no auth, host %q: %d %s", host, code, body)
		}
	}

	named, _ := serveDashboard(t, env, "--allowed-host", "dash.example", "--allowed-host", "ops.example")
	for host, want := range map[string]int{"dash.example": 200, "ops.example:8080": 200, "other.example": 421} {
		if code, _ := getHost(t, named+"api/csrf", host); code != want {
			t.Errorf("--allowed-host, host %s: %d, want %d", host, code, want)
		}
	}

	authed, _ := serveDashboard(t, env, "--token", "s3cret")
	if code, _ := getHost(t, authed+"api/csrf", rebound, "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("with a token, any host: %d", code)
	}

	if code, _, errOut := run(t, env, "dashboard", "--addr", "127.0.0.1:0", "--allowed-host", "https://dash.example"); code != exitUsage ||
		!strings.Contains(errOut, "AllowedHosts") {
		t.Errorf("a URL as --allowed-host: exit %d %q", code, errOut)
	}
}

// TestDashboardSecrets: the dashboard's secrets come from a file or the
// environment as well as from flags, which other users see in ps; a file's
// trailing newline is not part of the secret. A secret given empty from
// any source is a usage error naming the source and not the secret:
// before, "--token """ or an empty $SHARDQ_DASHBOARD_TOKEN served an
// open dashboard.
func TestDashboardSecrets(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	basicFile, tokenFile := file("basic", "ops:s3cret-Basic\n"), file("token", "s3cret-Token\r\n")

	base, p := serveDashboard(t, env, "--basic-auth-file", basicFile, "--token-file", tokenFile)
	if code, _ := getHost(t, base, ""); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code, _ := getHost(t, base, "", "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("ops:s3cret-Basic"))); code != 200 {
		t.Errorf("basic auth from the file: %d", code)
	}
	if code, _ := getHost(t, base, "", "Authorization", "Bearer s3cret-Token"); code != 200 {
		t.Errorf("token from the file: %d", code)
	}
	if strings.Contains(p.err.String(), "warning") {
		t.Errorf("files need no warning: %s", p.err.String())
	}

	envBase, _ := serveDashboard(t, map[string]string{"REDIS_URL": env["REDIS_URL"], "SHARDQ_DASHBOARD_TOKEN": "s3cret-Env"})
	if code, _ := getHost(t, envBase, "", "Authorization", "Bearer s3cret-Env"); code != 200 {
		t.Errorf("token from the environment: %d", code)
	}

	flagBase, fp := serveDashboard(t, env, "--token", "s3cret-Flag")
	if code, _ := getHost(t, flagBase, "", "Authorization", "Bearer s3cret-Flag"); code != 200 {
		t.Errorf("token from the flag: %d", code)
	}
	if w := fp.err.String(); !strings.Contains(w, "--token puts the secret where other users see it") || strings.Contains(w, "s3cret") {
		t.Errorf("flag warning %q", w)
	}

	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"empty --token":          {nil, []string{"--token", ""}, "--token is empty"},
		"empty --basic-auth":     {nil, []string{"--basic-auth", " "}, "--basic-auth is empty"},
		"no password":            {nil, []string{"--basic-auth", "ops:"}, "--basic-auth wants user:password"},
		"no user":                {nil, []string{"--basic-auth", ":s3cret-Hidden"}, "--basic-auth wants user:password"},
		"empty token file":       {nil, []string{"--token-file", file("empty", "")}, "--token-file " + filepath.Join(dir, "empty") + " is empty"},
		"newline token file":     {nil, []string{"--token-file", file("newline", "\n")}, "is empty"},
		"no password in file":    {nil, []string{"--basic-auth-file", file("nopass", "ops:\n")}, "wants user:password"},
		"no colon in file":       {nil, []string{"--basic-auth-file", file("nocolon", "s3cret-Hidden\n")}, "wants user:password"},
		"missing file":           {nil, []string{"--token-file", filepath.Join(dir, "nope")}, "no such file"},
		"flag and file":          {nil, []string{"--token", "s3cret-Hidden", "--token-file", tokenFile}, "give one"},
		"empty token variable":   {map[string]string{"SHARDQ_DASHBOARD_TOKEN": ""}, nil, "SHARDQ_DASHBOARD_TOKEN is empty"},
		"blank basic variable":   {map[string]string{"SHARDQ_DASHBOARD_BASIC_AUTH": "  "}, nil, "SHARDQ_DASHBOARD_BASIC_AUTH is empty"},
		"basic variable no pass": {map[string]string{"SHARDQ_DASHBOARD_BASIC_AUTH": "ops:"}, nil, "SHARDQ_DASHBOARD_BASIC_AUTH wants user:password"},
	} {
		e := map[string]string{"REDIS_URL": env["REDIS_URL"]}
		maps.Copy(e, c.env)
		code, errOut := refused(t, e, append([]string{"dashboard", "--addr", "127.0.0.1:0"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "s3cret") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 with %q and no secret", name, code, errOut, c.want)
		}
	}
}

// refused runs shardq, with env as its whole environment (set variables,
// empty ones too), and returns its exit code and stderr. A command that
// serves instead of exiting fails the test and is stopped.
func refused(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errOut syncBuffer
	m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] },
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, args) }()
	served := false
	waitUntil(t, 30*time.Second, "shardq to exit or serve", func() bool {
		served = strings.Contains(out.String(), "dashboard on ")
		return served || len(done) > 0
	})
	if served {
		t.Errorf("shardq %v served a dashboard", args)
		cancel()
	}
	return <-done, errOut.String()
}
