package dashboard_test

import (
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestPayloadJSONTagNames: the task page and the JSON API show a struct's
// payload keyed by its json tags, as NewTask writes it (issue 44).
func TestPayloadJSONTagNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.serve(dashboard.Options{Unauthenticated: true})
	type stamp struct {
		EnqueueNS int64  `json:"enqueue_ns"`
		Note      string `json:"note,omitempty"`
		Secret    string `json:"-"`
		Host      string
	}
	task, err := queue.NewTask("stamp", stamp{EnqueueNS: 1764230000123, Secret: "s3cret", Host: "h1"}, queue.In(e.q))
	must(t, err)
	info, err := e.client.Enqueue(e.ctx, task)
	must(t, err)
	var v struct {
		Payload         map[string]any
		PayloadEncoding string `json:"payload_encoding"`
	}
	r := e.get("/api/queues/" + e.q + "/tasks/" + info.ID)
	r.json(t, &v)
	if r.code != 200 || v.PayloadEncoding != "msgpack" || len(v.Payload) != 2 || v.Payload["enqueue_ns"] != float64(1764230000123) || v.Payload["Host"] != "h1" {
		t.Fatalf("API: %d %s", r.code, r.body)
	}
	page := e.get("/queues/" + e.q + "/tasks/" + info.ID)
	if page.code != 200 || !strings.Contains(page.body, "&#34;enqueue_ns&#34;") || strings.Contains(page.body, "EnqueueNS") || strings.Contains(page.body, "s3cret") {
		t.Fatalf("task page: %d\n%s", page.code, page.body)
	}
}
