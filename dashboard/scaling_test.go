package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
)

// TestKEDAScaledObject reads the ScaledObject in docs/autoscaling.md,
// calls its URL's path on a real dashboard and resolves its valueLocation
// in the answer, as KEDA's metrics-api scaler does: the value is a number,
// the desired-workers figure, and targetValue is a positive number.
func TestKEDAScaledObject(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/autoscaling.md")
	must(t, err)
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^\s+` + name + `:\s*"?([^"\n]+)"?\s*$`).FindStringSubmatch(string(doc))
		if m == nil {
			t.Fatalf("docs/autoscaling.md: no %s in the ScaledObject", name)
		}
		return m[1]
	}
	if typ := field("- type"); typ != "metrics-api" {
		t.Fatalf("trigger type %q, want metrics-api", typ)
	}
	target, err := strconv.ParseFloat(field("targetValue"), 64)
	if err != nil || target <= 0 {
		t.Fatalf("targetValue %q: want a positive number", field("targetValue"))
	}
	u, err := url.Parse(field("url"))
	must(t, err)

	e := setup(t, dashboard.Options{Unauthenticated: true})
	// the document's queue is "email"; ask the same path of the test queue
	path := strings.Replace(u.Path, "/queues/email/", "/queues/"+e.q+"/", 1)
	r := e.get(path + "?" + u.RawQuery)
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", path, r.code, r.body)
	}
	var doc2 map[string]any
	must(t, json.Unmarshal([]byte(r.body), &doc2))
	v := gjsonPath(t, doc2, field("valueLocation"))
	n, ok := v.(float64)
	if !ok {
		t.Fatalf("valueLocation %q is %v (%T), want a number", field("valueLocation"), v, v)
	}
	// the fixture: 4 pending (paused) and 2 running on one worker of 20
	// slots, no handler time known for the queue's running tasks yet, or
	// a short one: one worker is what it needs
	if n != 1 || doc2["workers"] != 1.0 || doc2["workerConcurrency"] != 20.0 || doc2["backlog"] != 4.0 || doc2["running"] != 2.0 {
		t.Fatalf("scaling %s", r.body)
	}
	if f, _ := doc2["formula"].(string); !strings.Contains(f, "desired = ceil(") {
		t.Fatalf("formula %q", doc2["formula"])
	}
	// bad inputs are a 400 naming the parameter
	for _, q := range []string{"drain=banana", "concurrency=0", "max=x", "window=1ms"} {
		if r := e.get("/api/queues/" + e.q + "/scaling?" + q); r.code != 400 || !strings.Contains(r.body, strings.Split(q, "=")[0]) {
			t.Errorf("?%s: %d %s, want 400 naming it", q, r.code, r.body)
		}
	}
	// the queue page shows the figure and its inputs
	if r := e.get("/queues/" + e.q); r.code != 200 || !strings.Contains(r.body, "Autoscaling: <b>1</b> worker") ||
		!strings.Contains(r.body, "needed = λ·S") {
		i := strings.Index(r.body, "scaling")
		t.Fatalf("queue page lacks the scaling figure: %d %s", r.code, r.body[max(0, i-100):min(len(r.body), i+600)])
	}
}

// gjsonPath resolves a dotted GJSON path (the subset KEDA users write:
// keys and array indexes) in v.
func gjsonPath(t *testing.T, v any, path string) any {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				t.Fatalf("path %q: %q is not an index of %d", path, part, len(x))
			}
			v = x[i]
		default:
			t.Fatalf("path %q: %q of %s", path, part, fmt.Sprint(v))
		}
	}
	return v
}

// TestWorkersPage shows each worker's host, PID, start time, queues with
// their weights, concurrency and busy slots, from the status its heartbeat
// publishes.
func TestWorkersPage(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	host, _ := os.Hostname()
	r := e.get("/workers")
	for _, want := range []string{host, fmt.Sprint(os.Getpid()), e.q + ":1", "2 / 20", "data-worker=\"" + e.worker + "\""} {
		if r.code != 200 || !strings.Contains(r.body, want) {
			t.Fatalf("workers page lacks %q: %d", want, r.code)
		}
	}
	var api struct {
		Workers []struct {
			ID          string         `json:"id"`
			Host        string         `json:"host"`
			PID         int            `json:"pid"`
			Started     string         `json:"started"`
			Queues      map[string]int `json:"queues"`
			Concurrency int            `json:"concurrency"`
			Busy        int            `json:"busy"`
		} `json:"workers"`
	}
	e.get("/api/workers").json(t, &api)
	if len(api.Workers) != 1 {
		t.Fatalf("workers %+v", api.Workers)
	}
	w := api.Workers[0]
	if w.ID != e.worker || w.Host != host || w.PID != os.Getpid() || w.Started == "" || w.Queues[e.q] != 1 || w.Concurrency != 20 || w.Busy != 2 {
		t.Fatalf("worker %+v", w)
	}
}
