package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
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
