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

// evilKey is a concurrency key whose name is markup, with a slash.
const evilKey = "<i>evil</i>"

// setupKeys is a queue of keyed tasks no worker serves yet: acme has 6
// waiting, globex 4, initech 2 and evilKey 1.
func setupKeys(t *testing.T, opts dashboard.Options) *env {
	t.Helper()
	e := newEnv(t)
	e.q = "tenants"
	e.enqueueKeyed("acme", "old", 6)
	e.enqueueKeyed("globex", "old", 4)
	e.enqueueKeyed("initech", "old", 2)
	e.enqueueKeyed(evilKey, "old", 1)
	e.serve(opts)
	return e
}

// enqueueKeyed enqueues n tasks of key, each with the payload
// "<key>/<tag>/<n>".
func (e *env) enqueueKeyed(key, tag string, n int) {
	e.t.Helper()
	tasks := make([]*queue.Task, n)
	for j := range tasks {
		tasks[j] = queue.NewRawTask("t", fmt.Appendf(nil, "%s/%s/%d", key, tag, j), queue.Group(key))
	}
	_, err := e.client.EnqueueMany(e.ctx, tasks, queue.In(e.q))
	must(e.t, err)
}

type apiKey struct {
	Key              string
	Waiting, Running int64
	Weight           int
	Paused           bool
}

type apiKeyPage struct {
	Keys []apiKey
	Next string
}

func keyNames(ks []apiKey) []string {
	out := make([]string, len(ks))
	for j, k := range ks {
		out[j] = k.Key
	}
	return out
}

// TestKeysAPI: a queue's keys by backlog, paged by marker; one key, with
// or without tasks; pause, resume and weight as actions; each bad input
// a 4xx that names it.
func TestKeysAPI(t *testing.T) {
	t.Parallel()
	e := setupKeys(t, dashboard.Options{Unauthenticated: true})
	qp := "/api/queues/" + e.q
	tok := e.csrf()
	post := func(path string, form url.Values) response {
		t.Helper()
		return e.do(http.MethodPost, path, form, "X-CSRF-Token", tok)
	}

	t.Run("ByBacklog", func(t *testing.T) {
		var p apiKeyPage
		r := e.get(qp + "/keys")
		r.json(t, &p)
		if r.code != 200 || fmt.Sprint(keyNames(p.Keys)) != fmt.Sprint([]string{"acme", "globex", "initech", evilKey}) || p.Next != "" {
			t.Fatalf("%d %s", r.code, r.body)
		}
		if k := p.Keys[0]; k.Waiting != 6 || k.Running != 0 || k.Weight != 1 || k.Paused {
			t.Fatalf("acme %+v", k)
		}
	})

	t.Run("Paged", func(t *testing.T) {
		var first, second apiKeyPage
		e.get(qp+"/keys?limit=3").json(t, &first)
		if len(first.Keys) != 3 || first.Next == "" {
			t.Fatalf("first page %+v", first)
		}
		r := e.get(qp + "/keys?limit=3&after=" + url.QueryEscape(first.Next))
		r.json(t, &second)
		if r.code != 200 || fmt.Sprint(keyNames(second.Keys)) != fmt.Sprint([]string{evilKey}) || second.Next != "" {
			t.Fatalf("second page: %d %s", r.code, r.body)
		}
	})

	t.Run("OneKey", func(t *testing.T) {
		var k apiKey
		r := e.get(qp + "/keys/" + url.PathEscape(evilKey))
		r.json(t, &k)
		if r.code != 200 || k.Key != evilKey || k.Waiting != 1 {
			t.Fatalf("%d %s", r.code, r.body)
		}
		// a key with no task is a key all the same: weight 1, nothing waiting
		var none apiKey
		r = e.get(qp + "/keys/hooli")
		r.json(t, &none)
		if r.code != 200 || none != (apiKey{Key: "hooli", Weight: 1}) {
			t.Fatalf("a key with no task: %d %s", r.code, r.body)
		}
	})

	t.Run("Actions", func(t *testing.T) {
		r := post(qp+"/keys/acme/pause", nil)
		if r.code != 200 || !strings.Contains(r.body, `"action": "pause-key"`) || !strings.Contains(r.body, `"key": "acme"`) {
			t.Fatalf("pause: %d %s", r.code, r.body)
		}
		if k := e.key(t, "acme"); !k.Paused || k.Waiting != 6 {
			t.Fatalf("acme after the pause: %+v", k)
		}
		var p apiKeyPage
		e.get(qp+"/keys").json(t, &p)
		if !p.Keys[0].Paused {
			t.Fatalf("the listing does not show acme paused: %+v", p.Keys[0])
		}
		if r := post(qp+"/keys/acme/resume", nil); r.code != 200 || e.key(t, "acme").Paused {
			t.Fatalf("resume: %d %s", r.code, r.body)
		}
		if r := post(qp+"/keys/globex/weight", url.Values{"weight": {"3"}}); r.code != 200 || e.key(t, "globex").Weight != 3 {
			t.Fatalf("weight: %d %s", r.code, r.body)
		}
		// a key with a slash is one path segment, escaped
		evil := qp + "/keys/" + url.PathEscape(evilKey)
		if r := post(evil+"/pause", nil); r.code != 200 || !e.key(t, evilKey).Paused || !strings.Contains(r.body, `"key": "\u003ci\u003eevil\u003c/i\u003e"`) {
			t.Fatalf("pause %s: %d %s", evilKey, r.code, r.body)
		}
		if r := post(evil+"/resume", nil); r.code != 200 || e.key(t, evilKey).Paused {
			t.Fatalf("resume %s: %d %s", evilKey, r.code, r.body)
		}
		// a key with no task keeps its pause, and shows it
		if r := post(qp+"/keys/hooli/pause", nil); r.code != 200 {
			t.Fatalf("pause a key with no task: %d %s", r.code, r.body)
		}
		var k apiKey
		e.get(qp+"/keys/hooli").json(t, &k)
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
			{"GET", "/api/queues/typo/keys", nil, 404, "no such queue"},
			{"GET", "/api/queues/typo/keys/acme", nil, 404, "no such queue"},
			{"GET", qp + "/keys/a%20b", nil, 400, "concurrency key"},
			{"GET", qp + "/keys/%7Bx%7D", nil, 400, "concurrency key"},
			{"GET", qp + "/keys?after=garbage!", nil, 400, "marker"},
			{"GET", qp + "/keys?after=" + url.QueryEscape(base64Of("tasks\x1e")), nil, 400, "marker"},
			{"GET", qp + "/keys?limit=0", nil, 400, "limit"},
			{"GET", qp + "/keys?limit=5000", nil, 400, "limit"},
			{"POST", "/api/queues/typo/keys/acme/pause", nil, 404, "no such queue"},
			{"POST", "/api/queues/typo/keys/acme/resume", nil, 404, "no such queue"},
			{"POST", qp + "/keys/a%20b/pause", nil, 400, "concurrency key"},
			{"POST", qp + "/keys/a%20b/resume", nil, 400, "concurrency key"},
			{"POST", qp + "/keys/a%20b/weight", url.Values{"weight": {"2"}}, 400, "concurrency key"},
			{"POST", qp + "/keys/acme/weight", url.Values{"weight": {"0"}}, 400, "weight 0"},
			{"POST", qp + "/keys/acme/weight", url.Values{"weight": {"1001"}}, 400, "weight 1001"},
			{"POST", qp + "/keys/acme/weight", url.Values{"weight": {"heavy"}}, 400, `weight \"heavy\", want a whole number 1..1000`},
			{"POST", qp + "/keys/acme/weight", nil, 400, `weight \"\"`},
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
		if k := e.key(t, "acme"); k.Weight != 1 || k.Paused {
			t.Fatalf("a refused action changed acme: %+v", k)
		}
		if names, _ := e.insp.Queues(e.ctx); strings.Contains(strings.Join(names, ","), "typo") {
			t.Fatalf("an action registered the unknown queue: %v", names)
		}
	})
}

func base64Of(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// key reads a key through the Inspector.
func (e *env) key(t *testing.T, key string) *queue.GroupInfo {
	t.Helper()
	k, err := e.insp.GetGroup(e.ctx, e.q, key)
	must(t, err)
	return k
}

// TestKeysPage: the Keys tab lists keys by backlog, pages by marker,
// finds one key, escapes key names, and posts its actions back to itself.
func TestKeysPage(t *testing.T) {
	t.Parallel()
	e := setupKeys(t, dashboard.Options{Unauthenticated: true})
	kp := "/queues/" + e.q + "/keys"
	row := regexp.MustCompile(`<tr data-key="([^"]*)"`)

	r := e.page(t, kp)
	var order []string
	for _, m := range row.FindAllStringSubmatch(r.body, -1) {
		order = append(order, html.UnescapeString(m[1]))
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{"acme", "globex", "initech", evilKey}) {
		t.Fatalf("rows %q, want by backlog", order)
	}
	if !strings.Contains(r.body, `data-tab="keys" class="here"`) || !strings.Contains(r.body, `data-action="pause-key"`) ||
		!strings.Contains(r.body, `id="key-search"`) || strings.Contains(r.body, `id="key-result"`) {
		t.Fatal("the Keys tab lacks its tab, its Pause buttons or its search, or shows a result unasked")
	}
	if strings.Contains(r.body, evilKey) || !strings.Contains(r.body, "&lt;i&gt;evil&lt;/i&gt;") {
		t.Fatal("a key's name is not shown as text")
	}
	if !strings.Contains(r.body, `action="/dash/queues/tenants/keys/%3Ci%3Eevil%3C%2Fi%3E/pause"`) {
		t.Fatal("the action of a key with a slash is not one path segment")
	}
	// the state tabs link to the Keys tab too
	if tab := e.page(t, "/queues/"+e.q+"?state=dead"); !strings.Contains(tab.body, `href="/dash/queues/tenants/keys" data-tab="keys">`) {
		t.Fatal("the dead tab does not link to the Keys tab")
	}

	t.Run("Search", func(t *testing.T) {
		r := e.page(t, kp+"?key=hooli")
		if !regexp.MustCompile(`id="key-result">[\s\S]*<tr data-key="hooli">`).MatchString(r.body) ||
			!strings.Contains(r.body, `value="hooli"`) {
			t.Fatal("the search shows no row for a key with no task")
		}
		if r := e.get(kp + "?key=a%20b"); r.code != 400 || !strings.Contains(r.body, "concurrency key") {
			t.Fatalf("search for a bad key name: %d", r.code)
		}
	})

	t.Run("DotKey", func(t *testing.T) {
		// a browser resolves "/keys/../pause" to the queue's own pause
		r := e.page(t, kp+"?key=..")
		if !strings.Contains(r.body, `<tr data-key="..">`) || strings.Contains(r.body, "/keys/../") ||
			!strings.Contains(r.body, "a URL cannot name this key") {
			t.Fatal("the row of key .. offers actions, or says nothing")
		}
	})

	t.Run("Pager", func(t *testing.T) {
		small := e.mount(dashboard.Options{Unauthenticated: true, PageSize: 3})
		r := small(t, kp)
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(r.body)
		if next == nil || len(row.FindAllString(r.body, -1)) != 3 {
			t.Fatal("no next page after 3 keys")
		}
		r = small(t, strings.TrimPrefix(html.UnescapeString(next[1]), "/dash"))
		if got := row.FindAllStringSubmatch(r.body, -1); len(got) != 1 || html.UnescapeString(got[0][1]) != evilKey ||
			strings.Contains(r.body, `rel="next"`) || !strings.Contains(r.body, "« first page") {
			t.Fatalf("second page: %q", got)
		}
	})

	t.Run("Forms", func(t *testing.T) {
		tok := e.csrf()
		back := kp + "?key=acme"
		r := e.do(http.MethodPost, kp+"/acme/pause", url.Values{"csrf": {tok}, "return": {back}})
		want := "/dash" + kp + "?done=pause-key&key=acme&n=0"
		if r.code != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Fatalf("pause form: %d to %q, want %q", r.code, r.header.Get("Location"), want)
		}
		page := e.page(t, strings.TrimPrefix(want, "/dash"))
		if !strings.Contains(page.body, "Key paused") || !strings.Contains(page.body, `data-action="resume-key"`) {
			t.Fatal("no flash or no Resume after the pause")
		}
		// a form with no page to return to comes back to the Keys tab
		r = e.do(http.MethodPost, kp+"/acme/weight", url.Values{"csrf": {tok}, "weight": {"5"}})
		if loc := r.header.Get("Location"); r.code != http.StatusSeeOther || loc != "/dash"+kp+"?done=set-key-weight&n=0" {
			t.Fatalf("weight form: %d to %q", r.code, loc)
		}
		if k := e.key(t, "acme"); k.Weight != 5 || !k.Paused {
			t.Fatalf("acme after the forms: %+v", k)
		}
		r = e.do(http.MethodPost, kp+"/acme/weight", url.Values{"csrf": {tok}, "weight": {"0"}})
		if r.code != 400 || !strings.Contains(r.body, "want 1..1000") {
			t.Fatalf("weight 0 from the form: %d\n%s", r.code, r.body)
		}
	})
}

// TestKeysReadOnly: a read-only dashboard's Keys tab shows no action,
// and refuses the key actions with 403.
func TestKeysReadOnly(t *testing.T) {
	t.Parallel()
	e := setupKeys(t, dashboard.Options{Unauthenticated: true, ReadOnly: true})
	r := e.page(t, "/queues/"+e.q+"/keys?key=acme")
	if strings.Contains(r.body, `method="post"`) || strings.Contains(r.body, "-key\"") || !strings.Contains(r.body, `<tr data-key="acme">`) {
		t.Fatal("the read-only Keys tab shows actions, or no keys")
	}
	tok := e.csrf()
	for _, p := range []string{"/api/queues/" + e.q + "/keys/acme/pause", "/queues/" + e.q + "/keys/acme/pause",
		"/api/queues/" + e.q + "/keys/acme/resume", "/api/queues/" + e.q + "/keys/acme/weight"} {
		r := e.do(http.MethodPost, p, url.Values{"csrf": {tok}, "weight": {"4"}}, "X-CSRF-Token", tok)
		if r.code != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("POST %s: %d %s", p, r.code, r.body)
		}
	}
	if k := e.key(t, "acme"); k.Paused || k.Weight != 1 {
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

// TestBrowserKeys: an operator in Chromium opens a queue's Keys tab,
// sees the keys by backlog, finds one, and pauses the busiest. A worker
// then runs the other keys' tasks, old and new, and none of the paused
// key's. Resumed from the page, the paused key's tasks run.
func TestBrowserKeys(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupKeys(t, dashboard.Options{Unauthenticated: true})
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"

	b.navigate(base + "/queues/" + e.q)
	b.click(`nav.tabs a[data-tab="keys"]`)
	b.waitFor("the Keys tab", `document.querySelector("table#keys tr[data-key]")`)
	order := b.eval(`Array.from(document.querySelectorAll("table#keys tr[data-key]")).map(function (tr) {
		return tr.dataset.key + "=" + tr.querySelector('[data-col="waiting"]').textContent }).join(" ")`)
	if want := "acme=6 globex=4 initech=2 " + evilKey + "=1"; order != want {
		t.Fatalf("rows %q, want %q", order, want)
	}
	b.screenshot("queue-keys")

	b.eval(`document.querySelector("#key-search input[name=key]").value = "globex"; true`)
	b.click(`#key-search button`)
	b.waitFor("the key found", `document.querySelector('#key-result tr[data-key="globex"]')`)
	if n := b.eval(`document.querySelector('#key-result tr[data-key="globex"] [data-col="waiting"]').textContent`); n != "4" {
		t.Fatalf("globex shows %v waiting, want 4", n)
	}

	b.click(`table#keys tr[data-key="acme"] button[data-action="pause-key"]`)
	b.waitFor("the page after the pause", `location.search.includes("done=pause-key")`)
	b.waitFor("acme shown paused", `document.readyState === "complete" &&
		document.querySelector('table#keys tr[data-key="acme"] [data-col="paused"] .badge') &&
		document.querySelector('table#keys tr[data-key="acme"] button[data-action="resume-key"]')`)
	if msg := b.eval(`document.querySelector(".flash").textContent`); !strings.HasPrefix(msg.(string), "Key paused") {
		t.Fatalf("flash %q", msg)
	}
	b.screenshot("queue-keys-paused")

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
	e.enqueueKeyed("acme", "new", 3)
	e.enqueueKeyed("globex", "new", 3)
	waitUntil(t, "the other keys' tasks to run, globex's new ones too", func() bool {
		return ran.count("globex/")+ran.count("initech/")+ran.count(evilKey) == 10
	})
	k := e.key(t, "acme")
	if n := ran.count("acme/"); n != 0 || !k.Paused || k.Waiting != 9 {
		t.Fatalf("paused acme: %d tasks started; GetKey = %+v; want none started, 9 waiting, paused", n, k)
	}

	b.navigate(base + "/queues/" + e.q + "/keys")
	b.waitFor("acme alone with tasks waiting", `document.querySelectorAll("table#keys tr[data-key]").length === 1 &&
		document.querySelector('table#keys tr[data-key="acme"] [data-col="waiting"]').textContent === "9"`)
	b.click(`table#keys tr[data-key="acme"] button[data-action="resume-key"]`)
	b.waitFor("the page after the resume", `location.search.includes("done=resume-key")`)
	waitUntil(t, "acme's tasks to run", func() bool { return ran.count("acme/") == 9 })
	if k := e.key(t, "acme"); k.Paused || k.Waiting != 0 {
		t.Fatalf("acme after the resume: %+v", k)
	}
	b.navigate(base + "/queues/" + e.q + "/keys")
	b.waitFor("no key with tasks waiting", `document.querySelector("table#keys tr.none")`)
	b.screenshot("queue-keys-empty")
	if d := b.dialogsSeen(); len(d) > 0 {
		t.Fatalf("JavaScript dialogs opened: %q", d)
	}
}
