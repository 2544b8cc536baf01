package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestUnknownQueue: a queue that does not exist is a 404, on the page
// (saying so and listing the queues there are, with no "running" badge
// and no Pause button) and in the API, and actions on it are refused
// (POST /api/queues/typo/pause once answered ok:true).
func TestUnknownQueue(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	r := e.get("/queues/typo")
	if r.code != http.StatusNotFound || !strings.Contains(r.body, "There is no queue <b>typo</b>") ||
		!strings.Contains(r.body, `href="/dash/queues/`+e.q+`"`) {
		t.Fatalf("GET /queues/typo: %d\n%s", r.code, r.body)
	}
	for _, bad := range []string{"badge running", ">Pause<", "delete-queue"} {
		if strings.Contains(r.body, bad) {
			t.Fatalf("the 404 page shows %q", bad)
		}
	}
	for _, path := range []string{"/api/queues/typo", "/api/queues/typo/tasks", "/api/queues/typo/history", "/api/queues/typo/scaling", "/queues/typo/tasks/x",
		"/api/queues/typo/groups", "/api/queues/typo/groups/k", "/queues/typo/groups"} {
		if r := e.get(path); r.code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", path, r.code, r.body)
		}
	}
	tok := e.csrf()
	for _, action := range []string{"pause", "resume", "delete-all?state=dead", "run-all?state=retry", "delete-queue",
		"groups/k/pause", "groups/k/resume", "groups/k/weight?weight=2"} {
		r := e.do(http.MethodPost, "/api/queues/typo/"+action, nil, "X-CSRF-Token", tok)
		if r.code != http.StatusNotFound || !strings.Contains(r.body, "no such queue") {
			t.Errorf("POST %s on an unknown queue: %d %s, want 404", action, r.code, r.body)
		}
	}
	if names, _ := e.insp.Queues(e.ctx); strings.Contains(strings.Join(names, ","), "typo") {
		t.Fatalf("an action registered the unknown queue: %v", names)
	}
}

// TestDeleteQueueAction: the dashboard deletes a queue, refusing one with
// tasks unless forced (a 409 naming the counts); the queue then leaves
// the list. The form, behind a confirmation, goes back to the overview.
func TestDeleteQueueAction(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	tok := e.csrf()
	post := func(path string, form url.Values) response {
		t.Helper()
		return e.do(http.MethodPost, path, form, "X-CSRF-Token", tok)
	}
	e.enqueue(3, "ok", queue.In("doomed"))
	e.enqueue(1, "ok", queue.In("formed"))

	if r := post("/api/queues/doomed/delete-queue", nil); r.code != http.StatusConflict || !strings.Contains(r.body, "pending 3") {
		t.Fatalf("delete a queue with tasks: %d %s, want 409", r.code, r.body)
	}
	if r := post("/api/queues/doomed/delete-queue", url.Values{"force": {"1"}}); r.code != 200 || !strings.Contains(r.body, `"action": "delete-queue"`) {
		t.Fatalf("forced delete: %d %s", r.code, r.body)
	}
	// the page offers it behind a confirmation
	if r := e.get("/queues/formed"); !strings.Contains(r.body, `id="delete-queue"`) || !strings.Contains(r.body, "data-confirm=") {
		t.Fatal("the queue page lacks the confirmed delete form")
	}
	r := post("/queues/formed/delete-queue", url.Values{"csrf": {tok}, "force": {"1"}})
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/dash/?done=delete-queue") {
		t.Fatalf("form delete: %d to %q", r.code, r.header.Get("Location"))
	}
	var list struct {
		Queues []struct{ Queue string } `json:"queues"`
	}
	e.get("/api/queues").json(t, &list)
	for _, q := range list.Queues {
		if q.Queue == "doomed" || q.Queue == "formed" {
			t.Fatalf("deleted queue %q still listed", q.Queue)
		}
	}
	if r := e.get("/queues/doomed"); r.code != http.StatusNotFound {
		t.Fatalf("deleted queue's page: %d", r.code)
	}
	if r := e.get("/?done=delete-queue"); !strings.Contains(r.body, "Queue deleted") {
		t.Fatal("no flash after the delete")
	}
}
