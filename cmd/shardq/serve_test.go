package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestServe: shardq serve refuses to start without a token, and with one
// enqueues a task over HTTP that the Inspector then finds.
func TestServe(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	if code, _, errOut := run(t, env, "serve", "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errOut, "no token") {
		t.Fatalf("serve without a token: exit %d, %s", code, errOut)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	p := startShardq(t, env, "serve", "--addr", "127.0.0.1:0", "--token-file", tokenFile)
	re := regexp.MustCompile(`on (http://[0-9.:]+)/v1/`)
	var base string
	waitUntil(t, 30*time.Second, "the API's address", func() bool {
		m := re.FindStringSubmatch(p.stdout.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	req, err := http.NewRequest("POST", base+"/v1/queues/jobs/tasks", strings.NewReader(`{"type":"hello","payload":{"to":"ann"},"group":"t1"}`))
	must(t, err)
	req.Header.Set("Authorization", "Bearer s3cret")
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var info struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &info) != nil || info.ID == "" {
		t.Fatalf("POST: %d %s", res.StatusCode, b)
	}
	ti, err := inspector(t, srv).GetTask(context.Background(), "jobs", info.ID)
	if err != nil || ti.Type != "hello" || string(ti.Payload) != `{"to":"ann"}` || ti.Group != "t1" || ti.State != queue.StatePending {
		t.Fatalf("the task enqueued over HTTP: %+v, %v", ti, err)
	}
	req, _ = http.NewRequest("GET", base+"/v1/openapi.json", nil)
	res, err = http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", res.StatusCode)
	}
}
