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
