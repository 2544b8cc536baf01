package dashboard_test

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

func TestPages(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})

	t.Run("Overview", func(t *testing.T) {
		r := e.page(t, "/")
		for _, want := range []string{`href="/dash/queues/emails"`, "<svg", `class="badge paused"`, "/dash/assets/style.css", `name="csrf-token"`,
			`Succeeded <span class="muted">kept</span></th>`, `Succeeded <span class="muted">all time</span></th>`,
			`href="/dash/queues/emails?state=succeeded">2</a>`, `id="succeeded-note"`} {
			if !strings.Contains(r.body, want) {
				t.Fatalf("overview lacks %q", want)
			}
		}
		if day := e.page(t, "/?span=day"); !strings.Contains(day.body, `class="here">day`) {
			t.Fatal("day span not selected")
		}
	})

	t.Run("QueueTabs", func(t *testing.T) {
		for state, want := range map[string][]string{
			"pending": e.pending, "active": e.active, "scheduled": e.scheduled,
			"retry": e.retry, "dead": e.dead, "succeeded": e.succeeded, "recent": e.pending,
		} {
			r := e.page(t, "/queues/"+e.q+"?state="+state)
			for _, id := range want {
				if !strings.Contains(r.body, `data-id="`+id+`"`) {
					t.Fatalf("%s tab lacks task %s", state, id)
				}
			}
			if !strings.Contains(r.body, `data-state="`+state+`" class="here"`) {
				t.Fatalf("%s tab not marked current", state)
			}
		}
		if r := e.page(t, "/queues/"+e.q); !strings.Contains(r.body, `data-id="`+e.pending[0]+`"`) {
			t.Fatal("default tab is not pending")
		}
		if r := e.page(t, "/queues/"+e.q+"?state=recent"); !strings.Contains(r.body, `id="live-tail"`) || !strings.Contains(r.body, `data-newer="`) {
			t.Fatal("recent tab has no live tail")
		}
	})

	t.Run("Pager", func(t *testing.T) {
		small := e.mount(dashboard.Options{Unauthenticated: true, PageSize: 2})
		r := small(t, "/queues/"+e.q+"?state=dead")
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(r.body)
		if next == nil {
			t.Fatal("no next page link")
		}
		seen := countRows(r.body)
		for range 5 {
			u := html.UnescapeString(next[1])
			r = small(t, strings.TrimPrefix(u, "/dash"))
			seen += countRows(r.body)
			if next = regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(r.body); next == nil {
				break
			}
		}
		if seen != 5 || !strings.Contains(r.body, "« first page") {
			t.Fatalf("paged %d dead tasks of 5", seen)
		}
	})

	t.Run("Task", func(t *testing.T) {
		r := e.page(t, "/queues/"+e.q+"/tasks/"+e.dead[1])
		for _, want := range []string{"bob@example.com", `data-action="run"`, `data-action="delete"`, "Last error", "msgpack"} {
			if !strings.Contains(r.body, want) {
				t.Fatalf("task page lacks %q", want)
			}
		}
		if r := e.get("/queues/" + e.q + "/tasks/nope"); r.code != 404 || !strings.Contains(r.body, "task not found") {
			t.Fatalf("unknown task: %d", r.code)
		}
		if r := e.page(t, "/queues/"+e.q+"/tasks/"+e.active[0]); !strings.Contains(r.body, `data-action="cancel"`) || !strings.Contains(r.body, e.worker) {
			t.Fatal("active task page lacks cancel or worker")
		}
	})

	t.Run("Workers", func(t *testing.T) {
		r := e.page(t, "/workers")
		if !strings.Contains(r.body, `data-worker="`+e.worker+`"`) || !strings.Contains(r.body, e.active[1]) {
			t.Fatal("workers page lacks the worker or its tasks")
		}
	})

	t.Run("SchedulesAndLimits", func(t *testing.T) {
		// what the worker's scheduler registered in Redis
		if r := e.page(t, "/schedules"); !strings.Contains(r.body, "nightly-digest") || !strings.Contains(r.body, "reports") || !strings.Contains(r.body, "<td>skip</td>") {
			t.Fatal("schedules page lacks the registered schedule")
		}
		if r := e.page(t, "/limits"); !strings.Contains(r.body, "None configured.") {
			t.Fatal("limits page without limits")
		}
		must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{Concurrency: 1000}))
		defer func() { must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{})) }()
		if r := e.page(t, "/limits"); !strings.Contains(r.body, "<td>concurrency</td>") || !strings.Contains(r.body, "1,000") {
			t.Fatal("limits page lacks the queue's concurrency limit")
		}
	})

	t.Run("Find", func(t *testing.T) {
		e.page(t, "/find")
		r := e.get("/find?queue=" + e.q + "&id=" + e.retry[0])
		if r.code != http.StatusSeeOther || r.header.Get("Location") != "/dash/queues/"+e.q+"/tasks/"+e.retry[0] {
			t.Fatalf("find: %d to %q", r.code, r.header.Get("Location"))
		}
		if r := e.get("/find?queue=" + e.q + "&id=nope"); r.code != 404 || !strings.Contains(r.body, "No task nope") {
			t.Fatalf("find unknown: %d", r.code)
		}
	})

	t.Run("BoundedRedisCalls", func(t *testing.T) {
		for path, most := range map[string]int64{
			"/":                                     1 + 2*1 + 2 + 1 + 4*1,   // queues, QueueInfo per queue, history; alarms: workers, per queue at most a rate and a dead sample
			"/queues/" + e.q + "?state=dead":        2 + 2 + 2 + 2 + 1,       // QueueInfo, History, ListTasks, Scaling, LiveWork
			"/queues/" + e.q + "/groups?group=k":    2 + 2 + 2 + 2 + 2 + 1,   // QueueInfo, History, Scaling, Groups, GetGroup, LiveWork
			"/queues/" + e.q + "?group=k":           2 + 2 + 2 + 1 + 2*4 + 2, // ... and ListTasks by Group: 2,000/500 pages of two, and two to stop mid-page
			"/api/queues/" + e.q + "/groups":        2 + 1,                   // Groups, and LiveWork to split running from ahead
			"/api/queues/" + e.q + "/groups/k":      2 + 1,
			"/queues/" + e.q + "/tasks/" + e.evil:   2,
			"/workers":                              2,
			"/api/queues/" + e.q + "/tasks?limit=5": 2,
		} {
			e.calls.roundTrips.Store(0)
			e.page(t, path)
			if n := e.calls.roundTrips.Load(); n > most {
				t.Errorf("%s: %d round trips, want <= %d", path, n, most)
			}
		}
	})

	t.Run("Assets", func(t *testing.T) {
		for path, ct := range map[string]string{"/assets/app.js": "javascript", "/assets/style.css": "text/css"} {
			r := e.get(path)
			if r.code != 200 || !strings.Contains(r.header.Get("Content-Type"), ct) {
				t.Fatalf("%s: %d %s", path, r.code, r.header.Get("Content-Type"))
			}
		}
		// no directory listing: the assets are what the pages link to
		for _, path := range []string{"/assets/", "/assets/nope/", "/assets/nope"} {
			if r := e.get(path); r.code != http.StatusNotFound || strings.Contains(r.body, "app.js") {
				t.Errorf("GET %s: %d %.200s, want 404 without a listing", path, r.code, r.body)
			}
		}
	})

	t.Run("SecurityHeaders", func(t *testing.T) {
		r := e.page(t, "/")
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("headers %v", r.header)
		}
	})
}

// page GETs a page and fails unless it is 200 HTML.
func (e *env) page(t *testing.T, path string) response {
	t.Helper()
	r := e.get(path)
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") && !strings.HasPrefix(path, "/api/") {
		t.Fatalf("GET %s: %d %s", path, r.code, r.body)
	}
	return r
}

// mount serves another dashboard over the same Redis under /other and
// returns a GET for its pages.
func (e *env) mount(opts dashboard.Options) func(t *testing.T, path string) response {
	mux := http.NewServeMux()
	mux.Handle("/other/", http.StripPrefix("/other", newDashboard(e.t, e.insp, opts)))
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return func(t *testing.T, path string) response {
		t.Helper()
		res, err := http.Get(srv.URL + "/other" + path)
		must(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		must(t, err)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return response{code: res.StatusCode, header: res.Header, body: strings.ReplaceAll(string(b), "/other/", "/dash/")}
	}
}

func countRows(body string) int { return strings.Count(body, "<tr data-id=") }

func TestEscaping(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	// a queue whose very name is markup
	evilQueue := "<script>x</script>"
	task, err := queue.NewTask("ok", map[string]any{"html": evilPayload})
	must(t, err)
	_, err = e.client.Enqueue(e.ctx, task, queue.In(evilQueue))
	must(t, err)

	pages := []string{
		"/queues/" + e.q + "/tasks/" + e.evil,
		"/queues/" + e.q + "?state=dead",
		"/queues/" + e.q + "?state=recent",
		"/",
		"/queues/" + url.PathEscape(evilQueue),
		"/find?queue=" + url.QueryEscape(evilQueue) + "&id=" + url.QueryEscape("<b>x</b>"),
	}
	for _, p := range pages {
		r := e.get(p)
		if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, "<script>x") ||
			strings.Contains(r.body, `<img src=x`) || strings.Contains(r.body, "<b>x</b>") {
			t.Errorf("%s renders markup from data:\n%s", p, r.body)
		}
	}
	r := e.page(t, "/queues/"+e.q+"/tasks/"+e.evil)
	if !strings.Contains(r.body, "&lt;script&gt;alert(") || !strings.Contains(r.body, "&lt;img src=x onerror=") {
		t.Fatalf("the payload and error are not shown as text:\n%s", r.body)
	}
	if r := e.page(t, "/"); !strings.Contains(r.body, "&lt;script&gt;x&lt;/script&gt;") {
		t.Fatal("the queue name is not shown as text")
	}
}
