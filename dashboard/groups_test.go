package dashboard_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// evilGroup is a group whose name is markup, with a slash.
const evilGroup = "<i>evil</i>"

// setupGroups is a queue of grouped tasks no worker serves yet: acme has 6
// waiting, globex 4, initech 2 and evilGroup 1.
func setupGroups(t *testing.T, opts dashboard.Options) *env {
	t.Helper()
	e := newEnv(t)
	e.q = "tenants"
	e.enqueueGrouped("acme", "old", 6)
	e.enqueueGrouped("globex", "old", 4)
	e.enqueueGrouped("initech", "old", 2)
	e.enqueueGrouped(evilGroup, "old", 1)
	e.serve(opts)
	return e
}

// enqueueGrouped enqueues n tasks of group, each with the payload
// "<group>/<tag>/<n>".
func (e *env) enqueueGrouped(group, tag string, n int) {
	e.t.Helper()
	tasks := make([]*queue.Task, n)
	for j := range tasks {
		tasks[j] = queue.NewRawTask("t", fmt.Appendf(nil, "%s/%s/%d", group, tag, j), queue.Group(group))
	}
	_, err := e.client.EnqueueMany(e.ctx, tasks, queue.In(e.q))
	must(e.t, err)
}

type apiGroup struct {
	Group            string
	Waiting, Running int64
	Weight           int
	Paused           bool
}

type apiGroupPage struct {
	Groups []apiGroup
	Next   string
}

func groupNames(gs []apiGroup) []string {
	out := make([]string, len(gs))
	for j, g := range gs {
		out[j] = g.Group
	}
	return out
}

// TestGroupsAPI: a queue's groups by backlog, paged by marker; one group, with
// or without tasks; pause, resume and weight as actions; each bad input
// a 4xx that names it.
func TestGroupsAPI(t *testing.T) {
	t.Parallel()
	e := setupGroups(t, dashboard.Options{Unauthenticated: true})
	qp := "/api/queues/" + e.q
	tok := e.csrf()
	post := func(path string, form url.Values) response {
		t.Helper()
		return e.do(http.MethodPost, path, form, "X-CSRF-Token", tok)
	}

	t.Run("ByBacklog", func(t *testing.T) {
		var p apiGroupPage
		r := e.get(qp + "/groups")
		r.json(t, &p)
		if r.code != 200 || fmt.Sprint(groupNames(p.Groups)) != fmt.Sprint([]string{"acme", "globex", "initech", evilGroup}) || p.Next != "" {
			t.Fatalf("%d %s", r.code, r.body)
		}
		if k := p.Groups[0]; k.Waiting != 6 || k.Running != 0 || k.Weight != 1 || k.Paused {
			t.Fatalf("acme %+v", k)
		}
	})

	t.Run("Paged", func(t *testing.T) {
		var first, second apiGroupPage
		e.get(qp+"/groups?limit=3").json(t, &first)
		if len(first.Groups) != 3 || first.Next == "" {
			t.Fatalf("first page %+v", first)
		}
		r := e.get(qp + "/groups?limit=3&after=" + url.QueryEscape(first.Next))
		r.json(t, &second)
		if r.code != 200 || fmt.Sprint(groupNames(second.Groups)) != fmt.Sprint([]string{evilGroup}) || second.Next != "" {
			t.Fatalf("second page: %d %s", r.code, r.body)
		}
	})

	t.Run("OneGroup", func(t *testing.T) {
		var k apiGroup
		r := e.get(qp + "/groups/" + url.PathEscape(evilGroup))
		r.json(t, &k)
		if r.code != 200 || k.Group != evilGroup || k.Waiting != 1 {
			t.Fatalf("%d %s", r.code, r.body)
		}
		// a group with no task is a group all the same: weight 1, nothing waiting
		var none apiGroup
		r = e.get(qp + "/groups/hooli")
		r.json(t, &none)
		if r.code != 200 || none != (apiGroup{Group: "hooli", Weight: 1}) {
			t.Fatalf("a group with no task: %d %s", r.code, r.body)
		}
	})

	t.Run("Actions", func(t *testing.T) {
		r := post(qp+"/groups/acme/pause", nil)
		if r.code != 200 || !strings.Contains(r.body, `"action": "pause-group"`) || !strings.Contains(r.body, `"group": "acme"`) {
			t.Fatalf("pause: %d %s", r.code, r.body)
		}
		if k := e.group(t, "acme"); !k.Paused || k.Waiting != 6 {
			t.Fatalf("acme after the pause: %+v", k)
		}
		var p apiGroupPage
		e.get(qp+"/groups").json(t, &p)
		if !p.Groups[0].Paused {
			t.Fatalf("the listing does not show acme paused: %+v", p.Groups[0])
		}
		if r := post(qp+"/groups/acme/resume", nil); r.code != 200 || e.group(t, "acme").Paused {
			t.Fatalf("resume: %d %s", r.code, r.body)
		}
		if r := post(qp+"/groups/globex/weight", url.Values{"weight": {"3"}}); r.code != 200 || e.group(t, "globex").Weight != 3 {
			t.Fatalf("weight: %d %s", r.code, r.body)
		}
		// a group with a slash is one path segment, escaped
		evil := qp + "/groups/" + url.PathEscape(evilGroup)
		if r := post(evil+"/pause", nil); r.code != 200 || !e.group(t, evilGroup).Paused || !strings.Contains(r.body, `"group": "\u003ci\u003eevil\u003c/i\u003e"`) {
			t.Fatalf("pause %s: %d %s", evilGroup, r.code, r.body)
		}
		if r := post(evil+"/resume", nil); r.code != 200 || e.group(t, evilGroup).Paused {
			t.Fatalf("resume %s: %d %s", evilGroup, r.code, r.body)
		}
		// a group with no task keeps its pause, and shows it
		if r := post(qp+"/groups/hooli/pause", nil); r.code != 200 {
			t.Fatalf("pause a group with no task: %d %s", r.code, r.body)
		}
		var k apiGroup
		e.get(qp+"/groups/hooli").json(t, &k)
		if !k.Paused || k.Waiting != 0 {
			t.Fatalf("hooli after its pause: %+v", k)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		for _, c := range []struct {
			method, path string
			form         url.Values
			code         int
			says         string
		}{
			{"GET", "/api/queues/typo/groups", nil, 404, "no such queue"},
			{"GET", "/api/queues/typo/groups/acme", nil, 404, "no such queue"},
			{"GET", qp + "/groups/a%20b", nil, 400, `group \"a b\"`},
			{"GET", qp + "/groups/%7Bx%7D", nil, 400, `group \"{x}\"`},
			{"GET", qp + "/groups?after=garbage!", nil, 400, "marker"},
			{"GET", qp + "/groups?after=" + url.QueryEscape(base64Of("tasks\x1e")), nil, 400, "marker"},
			{"GET", qp + "/groups?limit=0", nil, 400, "limit"},
			{"GET", qp + "/groups?limit=5000", nil, 400, "limit"},
			{"POST", "/api/queues/typo/groups/acme/pause", nil, 404, "no such queue"},
			{"POST", "/api/queues/typo/groups/acme/resume", nil, 404, "no such queue"},
			{"POST", qp + "/groups/a%20b/pause", nil, 400, `group \"a b\"`},
			{"POST", qp + "/groups/a%20b/resume", nil, 400, `group \"a b\"`},
			{"POST", qp + "/groups/a%20b/weight", url.Values{"weight": {"2"}}, 400, `group \"a b\"`},
			{"POST", qp + "/groups/acme/weight", url.Values{"weight": {"0"}}, 400, "weight 0"},
			{"POST", qp + "/groups/acme/weight", url.Values{"weight": {"1001"}}, 400, "weight 1001"},
			{"POST", qp + "/groups/acme/weight", url.Values{"weight": {"heavy"}}, 400, `weight \"heavy\", want a whole number 1..1000`},
			{"POST", qp + "/groups/acme/weight", nil, 400, `weight \"\"`},
		} {
			var r response
			if c.method == "GET" {
				r = e.get(c.path)
			} else {
				r = post(c.path, c.form)
			}
			var v struct{ Error string }
			r.json(t, &v)
			if r.code != c.code || !strings.Contains(r.body, c.says) {
				t.Errorf("%s %s %v: %d %s, want %d saying %q", c.method, c.path, c.form, r.code, r.body, c.code, c.says)
			}
		}
		if k := e.group(t, "acme"); k.Weight != 1 || k.Paused {
			t.Fatalf("a refused action changed acme: %+v", k)
		}
		if names, _ := e.insp.Queues(e.ctx); strings.Contains(strings.Join(names, ","), "typo") {
			t.Fatalf("an action registered the unknown queue: %v", names)
		}
	})
}

func base64Of(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// group reads a group through the Inspector.
func (e *env) group(t *testing.T, group string) *queue.GroupInfo {
	t.Helper()
	g, err := e.insp.GetGroup(e.ctx, e.q, group)
	must(t, err)
	return g
}

// TestGroupsPage: the Groups tab lists groups by backlog, pages by marker,
// finds one group, escapes group names, and posts its actions back to itself.
func TestGroupsPage(t *testing.T) {
	t.Parallel()
	e := setupGroups(t, dashboard.Options{Unauthenticated: true})
	gp := "/queues/" + e.q + "/groups"
	row := regexp.MustCompile(`<tr data-group="([^"]*)"`)

	r := e.page(t, gp)
	var order []string
	for _, m := range row.FindAllStringSubmatch(r.body, -1) {
		order = append(order, html.UnescapeString(m[1]))
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{"acme", "globex", "initech", evilGroup}) {
		t.Fatalf("rows %q, want by backlog", order)
	}
	if !strings.Contains(r.body, `data-tab="groups" class="here"`) || !strings.Contains(r.body, `data-action="pause-group"`) ||
		!strings.Contains(r.body, `id="group-search"`) || strings.Contains(r.body, `id="group-result"`) {
		t.Fatal("the Groups tab lacks its tab, its Pause buttons or its search, or shows a result unasked")
	}
	if strings.Contains(r.body, evilGroup) || !strings.Contains(r.body, "&lt;i&gt;evil&lt;/i&gt;") {
		t.Fatal("a group's name is not shown as text")
	}
	if !strings.Contains(r.body, `action="/dash/queues/tenants/groups/%3Ci%3Eevil%3C%2Fi%3E/pause"`) {
		t.Fatal("the action of a group with a slash is not one path segment")
	}
	// the state tabs link to the Groups tab too
	if tab := e.page(t, "/queues/"+e.q+"?state=dead"); !strings.Contains(tab.body, `href="/dash/queues/tenants/groups" data-tab="groups">`) {
		t.Fatal("the dead tab does not link to the Groups tab")
	}

	t.Run("Search", func(t *testing.T) {
		r := e.page(t, gp+"?group=hooli")
		if !regexp.MustCompile(`id="group-result">[\s\S]*<tr data-group="hooli">`).MatchString(r.body) ||
			!strings.Contains(r.body, `value="hooli"`) {
			t.Fatal("the search shows no row for a group with no task")
		}
		if r := e.get(gp + "?group=a%20b"); r.code != 400 || !strings.Contains(r.body, "group &#34;a b&#34;") {
			t.Fatalf("search for a bad group name: %d", r.code)
		}
	})

	t.Run("DotGroup", func(t *testing.T) {
		// a browser resolves "/groups/../pause" to the queue's own pause
		r := e.page(t, gp+"?group=..")
		if !strings.Contains(r.body, `<tr data-group="..">`) || strings.Contains(r.body, "/groups/../") ||
			!strings.Contains(r.body, "a URL cannot name this group") {
			t.Fatal("the row of group .. offers actions, or says nothing")
		}
	})

	t.Run("Pager", func(t *testing.T) {
		small := e.mount(dashboard.Options{Unauthenticated: true, PageSize: 3})
		r := small(t, gp)
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(r.body)
		if next == nil || len(row.FindAllString(r.body, -1)) != 3 {
			t.Fatal("no next page after 3 groups")
		}
		r = small(t, strings.TrimPrefix(html.UnescapeString(next[1]), "/dash"))
		if got := row.FindAllStringSubmatch(r.body, -1); len(got) != 1 || html.UnescapeString(got[0][1]) != evilGroup ||
			strings.Contains(r.body, `rel="next"`) || !strings.Contains(r.body, "« first page") {
			t.Fatalf("second page: %q", got)
		}
	})

	t.Run("Forms", func(t *testing.T) {
		tok := e.csrf()
		back := gp + "?group=acme"
		r := e.do(http.MethodPost, gp+"/acme/pause", url.Values{"csrf": {tok}, "return": {back}})
		want := "/dash" + gp + "?done=pause-group&group=acme&n=0"
		if r.code != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Fatalf("pause form: %d to %q, want %q", r.code, r.header.Get("Location"), want)
		}
		page := e.page(t, strings.TrimPrefix(want, "/dash"))
		if !strings.Contains(page.body, "Group paused") || !strings.Contains(page.body, `data-action="resume-group"`) {
			t.Fatal("no flash or no Resume after the pause")
		}
		// a form with no page to return to comes back to the Groups tab
		r = e.do(http.MethodPost, gp+"/acme/weight", url.Values{"csrf": {tok}, "weight": {"5"}})
		if loc := r.header.Get("Location"); r.code != http.StatusSeeOther || loc != "/dash"+gp+"?done=set-group-weight&n=0" {
			t.Fatalf("weight form: %d to %q", r.code, loc)
		}
		if k := e.group(t, "acme"); k.Weight != 5 || !k.Paused {
			t.Fatalf("acme after the forms: %+v", k)
		}
		r = e.do(http.MethodPost, gp+"/acme/weight", url.Values{"csrf": {tok}, "weight": {"0"}})
		if r.code != 400 || !strings.Contains(r.body, "want 1..1000") {
			t.Fatalf("weight 0 from the form: %d\n%s", r.code, r.body)
		}
	})
}

// TestGroupsReadOnly: a read-only dashboard's Groups tab shows no action,
// and refuses the group actions with 403.
func TestGroupsReadOnly(t *testing.T) {
	t.Parallel()
	e := setupGroups(t, dashboard.Options{Unauthenticated: true, ReadOnly: true})
	r := e.page(t, "/queues/"+e.q+"/groups?group=acme")
	if strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "-group\"") || !strings.Contains(r.body, `<tr data-group="acme">`) {
		t.Fatal("the read-only Groups tab shows actions, or no groups")
	}
	tok := e.csrf()
	for _, p := range []string{"/api/queues/" + e.q + "/groups/acme/pause", "/queues/" + e.q + "/groups/acme/pause",
		"/api/queues/" + e.q + "/groups/acme/resume", "/api/queues/" + e.q + "/groups/acme/weight"} {
		r := e.do(http.MethodPost, p, url.Values{"csrf": {tok}, "weight": {"4"}}, "X-CSRF-Token", tok)
		if r.code != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("POST %s: %d %s", p, r.code, r.body)
		}
	}
	if k := e.group(t, "acme"); k.Paused || k.Weight != 1 {
		t.Fatalf("a read-only dashboard changed acme: %+v", k)
	}
}

// starts records the payload of each task as it starts.
type starts struct {
	mu    sync.Mutex
	names []string
}

func (s *starts) add(name string) {
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
}

// count is how many tasks started whose payload begins with prefix.
func (s *starts) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, name := range s.names {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// waitUntil polls cond until it holds, for at most 30s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrowserGroups: an operator in Chromium opens a queue's Groups tab,
// sees the groups by backlog, finds one, and pauses the busiest. A worker
// then runs the other groups' tasks, old and new, and none of the paused
// group's. Resumed from the page, the paused group's tasks run.
func TestBrowserGroups(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupGroups(t, dashboard.Options{Unauthenticated: true})
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"

	b.navigate(base + "/queues/" + e.q)
	b.click(`nav.tabs a[data-tab="groups"]`)
	b.waitFor("the Groups tab", `document.querySelector("table#groups tr[data-group]")`)
	order := b.eval(`Array.from(document.querySelectorAll("table#groups tr[data-group]")).map(function (tr) {
		return tr.dataset.group + "=" + tr.querySelector('[data-col="waiting"]').textContent }).join(" ")`)
	if want := "acme=6 globex=4 initech=2 " + evilGroup + "=1"; order != want {
		t.Fatalf("rows %q, want %q", order, want)
	}
	b.screenshot("queue-groups")

	b.eval(`document.querySelector("#group-search input[name=group]").value = "globex"; true`)
	b.click(`#group-search button`)
	b.waitFor("the group found", `document.querySelector('#group-result tr[data-group="globex"]')`)
	if n := b.eval(`document.querySelector('#group-result tr[data-group="globex"] [data-col="waiting"]').textContent`); n != "4" {
		t.Fatalf("globex shows %v waiting, want 4", n)
	}

	b.click(`table#groups tr[data-group="acme"] button[data-action="pause-group"]`)
	b.waitFor("the page after the pause", `location.search.includes("done=pause-group")`)
	b.waitFor("acme shown paused", `document.readyState === "complete" &&
		document.querySelector('table#groups tr[data-group="acme"] [data-col="paused"] .badge') &&
		document.querySelector('table#groups tr[data-group="acme"] button[data-action="resume-group"]')`)
	if msg := b.eval(`document.querySelector(".flash").textContent`); !strings.HasPrefix(msg.(string), "Group paused") {
		t.Fatalf("flash %q", msg)
	}
	b.screenshot("queue-groups-paused")

	// a worker starts; new tasks of acme and globex arrive
	ran := &starts{}
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg, Queues: map[string]int{e.q: 1}, Concurrency: 2},
		worker.HandlerFunc(func(_ context.Context, task *worker.Task) error {
			ran.add(string(task.Payload))
			return nil
		}))
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e.enqueueGrouped("acme", "new", 3)
	e.enqueueGrouped("globex", "new", 3)
	waitUntil(t, "the other groups' tasks to run, globex's new ones too", func() bool {
		return ran.count("globex/")+ran.count("initech/")+ran.count(evilGroup) == 10
	})
	k := e.group(t, "acme")
	if n := ran.count("acme/"); n != 0 || !k.Paused || k.Waiting != 9 {
		t.Fatalf("paused acme: %d tasks started; GetGroup = %+v; want none started, 9 waiting, paused", n, k)
	}

	b.navigate(base + "/queues/" + e.q + "/groups")
	b.waitFor("acme alone with tasks waiting", `document.querySelectorAll("table#groups tr[data-group]").length === 1 &&
		document.querySelector('table#groups tr[data-group="acme"] [data-col="waiting"]').textContent === "9"`)
	b.click(`table#groups tr[data-group="acme"] button[data-action="resume-group"]`)
	b.waitFor("the page after the resume", `location.search.includes("done=resume-group")`)
	waitUntil(t, "acme's tasks to run", func() bool { return ran.count("acme/") == 9 })
	if k := e.group(t, "acme"); k.Paused || k.Waiting != 0 {
		t.Fatalf("acme after the resume: %+v", k)
	}
	b.navigate(base + "/queues/" + e.q + "/groups")
	b.waitFor("no group with tasks waiting", `document.querySelector("table#groups tr.none")`)
	b.screenshot("queue-groups-empty")
	if d := b.dialogsSeen(); len(d) > 0 {
		t.Fatalf("JavaScript dialogs opened: %q", d)
	}
}
