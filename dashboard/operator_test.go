package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestOverviewAlarms: the overview raises an alarm for a queue with
// pending tasks and no live worker, for a paused queue whose backlog
// grows, and for tasks that went to dead in the last hour.
func TestOverviewAlarms(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	e.enqueue(3, "ok", queue.In("orphan")) // no worker serves it
	e.get("/")                             // the first rate sample of the paused queue
	time.Sleep(1100 * time.Millisecond)    // a rate needs a sample a tenth of its 10s window old
	e.enqueue(2, "ok", queue.In(e.q))      // the paused queue grows
	time.Sleep(300 * time.Millisecond)
	r := e.get("/")
	for _, want := range []string{
		`data-alarm="no-workers" data-queue="orphan"`,
		`data-alarm="paused-growing" data-queue="` + e.q + `"`,
		`data-alarm="dead" data-queue="` + e.q + `"`,
		"5 tasks went to dead in the last hour",
	} {
		if r.code != 200 || !strings.Contains(r.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(r.body, `data-alarm="no-workers" data-queue="`+e.q+`"`) {
		t.Error("a served queue raised the no-workers alarm")
	}
	if !strings.Contains(r.body, `id="auto-refresh"`) || !strings.Contains(r.body, `data-live="overview"`) {
		t.Error("the overview does not refresh itself")
	}
}

// TestBulkActions: selected tasks are retried or deleted in one request;
// bad requests are refused.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	tok := e.csrf()
	post := func(form url.Values) response {
		return e.do(http.MethodPost, "/api/queues/"+e.q+"/bulk", form, "X-CSRF-Token", tok)
	}
	r := post(url.Values{"action": {"run"}, "id": {e.dead[0], e.dead[1], e.pending[0]}})
	if r.code != 200 || !strings.Contains(r.body, `"count": 2`) {
		t.Fatalf("bulk run: %d %s", r.code, r.body)
	}
	r = post(url.Values{"action": {"delete"}, "id": {e.retry[0], e.retry[1]}})
	if r.code != 200 || !strings.Contains(r.body, `"count": 2`) {
		t.Fatalf("bulk delete: %d %s", r.code, r.body)
	}
	if qi := e.info(); qi.Dead != 3 || qi.Retry != 1 {
		t.Fatalf("after the bulk actions: %+v", qi)
	}
	for _, bad := range []url.Values{{"action": {"run"}}, {"action": {"explode"}, "id": {e.dead[2]}}} {
		if r := post(bad); r.code != http.StatusBadRequest {
			t.Errorf("%v: %d, want 400", bad, r.code)
		}
	}
	// one pending task, by ID: gone from the counts and the pending tab
	before := e.info().Pending
	if r := e.do(http.MethodPost, "/api/queues/"+e.q+"/tasks/"+e.pending[1]+"/delete", nil, "X-CSRF-Token", tok); r.code != 200 {
		t.Fatalf("delete a pending task: %d %s", r.code, r.body)
	}
	if after := e.info().Pending; after != before-1 {
		t.Fatalf("pending %d after deleting one of %d", after, before)
	}
	if tab := e.get("/queues/" + e.q + "?state=pending"); strings.Contains(tab.body, `data-id="`+e.pending[1]+`"`) ||
		!strings.Contains(tab.body, `data-action="delete"`) {
		t.Fatal("the pending tab still lists the deleted task, or offers no Delete")
	}
	// the page: a checkbox per row in the bulk form
	page := e.get("/queues/" + e.q + "?state=dead")
	if !strings.Contains(page.body, `form="bulk"`) || !strings.Contains(page.body, `id="bulk"`) {
		t.Fatal("the dead tab has no bulk selection")
	}
}
