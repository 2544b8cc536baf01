package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestRedactedInBrowser: tasks encrypted under a key ring show, in
// headless Chromium, as redacted on a dashboard without the ring (the
// task page, its list, and the JSON API name the key and hold no
// plaintext), and in full on a dashboard given the ring.
func TestRedactedInBrowser(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	const secret = "4111-1111-1111-1111"
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	ring := &queue.KeyRing{Current: "2026-11", Keys: map[string][]byte{"2026-11": bytes.Repeat([]byte{7}, 32)}}
	sealed := queue.Config{Prefix: redistest.Prefix(t), KeyRing: ring, EncryptErrors: true}
	plain := sealed
	plain.KeyRing, plain.EncryptErrors = nil, false
	client, err := queue.NewClient(rdb, sealed)
	must(t, err)
	mux := worker.NewMux()
	mux.HandleFunc("charge", func(ctx context.Context, task *worker.Task) error {
		if err := task.SetProgress(ctx, 100, "charged "+secret); err != nil {
			return err
		}
		if _, err := worker.Step(ctx, "charge", func(context.Context) (string, error) { return "receipt " + secret, nil }); err != nil {
			return err
		}
		return task.SetResult(ctx, []byte("result "+secret))
	})
	mux.HandleFunc("decline", func(context.Context, *worker.Task) error {
		return worker.SkipRetry(errors.New("declined " + secret))
	})
	w, err := worker.NewServer(rdb, worker.Config{Config: sealed}, mux)
	must(t, err)
	must(t, w.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	})
	task, err := queue.NewTask("charge", map[string]string{"card": secret})
	must(t, err)
	succeeded, err := client.Enqueue(ctx, task, queue.Retention(time.Hour))
	must(t, err)
	decline, err := queue.NewTask("decline", map[string]string{"card": secret})
	must(t, err)
	dead, err := client.Enqueue(ctx, decline)
	must(t, err)
	withRing, err := queue.NewInspector(rdb, sealed)
	must(t, err)
	waitUntil(t, "one task succeeded, one dead", func() bool {
		qi, err := withRing.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Succeeded == 1 && qi.Dead == 1
	})
	blind, err := queue.NewInspector(rdb, plain)
	must(t, err)
	serve := func(insp *queue.Inspector) string {
		hs := httptest.NewServer(newDashboard(t, insp, dashboard.Options{Unauthenticated: true}))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	blindURL, ringURL := serve(blind), serve(withRing)
	b := startBrowser(t, path).in(t)

	for _, id := range []string{succeeded.ID, dead.ID} {
		b.navigate(blindURL + "/queues/" + queue.DefaultQueue + "/tasks/" + id)
		b.waitFor("the redaction notice", `document.getElementById("redacted")`)
		if got := b.eval(`document.getElementById("payload").textContent`); got != "redacted" {
			t.Fatalf("task %s: payload shown as %q without the ring", id, got)
		}
		text, _ := b.eval(`document.body.textContent`).(string)
		if strings.Contains(text, secret) || !strings.Contains(text, "key 2026-11") {
			t.Fatalf("task %s without the ring: the page holds the secret, or does not name the key:\n%s", id, text)
		}
		b.screenshot("task-redacted")
	}
	b.navigate(blindURL + "/queues/" + queue.DefaultQueue + "?state=dead")
	b.waitFor("the dead tab", `document.querySelector('tr[data-id="`+dead.ID+`"]')`)
	if text, _ := b.eval(`document.body.textContent`).(string); strings.Contains(text, secret) || !strings.Contains(text, "redacted: encrypted with key 2026-11") {
		t.Fatalf("dead tab without the ring:\n%s", text)
	}
	api, err := http.Get(blindURL + "/api/queues/" + queue.DefaultQueue + "/tasks/" + succeeded.ID)
	must(t, err)
	var body bytes.Buffer
	_, _ = body.ReadFrom(api.Body)
	_ = api.Body.Close()
	var v struct {
		PayloadEncoding string `json:"payload_encoding"`
		EncryptedWith   string `json:"encrypted_with"`
		Redacted        bool
	}
	must(t, json.Unmarshal(body.Bytes(), &v))
	if strings.Contains(body.String(), secret) || v.PayloadEncoding != "redacted" || v.EncryptedWith != "2026-11" || !v.Redacted {
		t.Fatalf("API without the ring: %s", body.String())
	}

	b.navigate(ringURL + "/queues/" + queue.DefaultQueue + "/tasks/" + succeeded.ID)
	b.waitFor("the payload", `document.getElementById("payload")`)
	text, _ := b.eval(`document.body.textContent`).(string)
	for _, want := range []string{`"card": "` + secret, "result " + secret, "charged " + secret, "receipt " + secret} {
		if !strings.Contains(text, want) {
			t.Fatalf("task page with the ring lacks %q:\n%s", want, text)
		}
	}
	if b.eval(`document.getElementById("redacted") === null`) != true {
		t.Fatal("a redaction notice on the dashboard that has the ring")
	}
	b.screenshot("task-decrypted")
}
