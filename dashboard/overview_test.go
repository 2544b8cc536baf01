package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/shardq/shardq/internal/inspect"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestOverviewBoundedByPage: anyone who can enqueue can make queues, so
// an overview over 3,000 of them must cost what one over a page of them
// costs (BENCHMARKS.md, "Dashboard views", has the figures before and
// after). Commands are counted by the private server
// (INFO commandstats, which counts a script's calls too), as is the
// page's and the API's size, against the same views over 50 queues.
func TestOverviewBoundedByPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	small := e.cfg
	small.Prefix += "-small"
	register := func(cfg queue.Config, n int) {
		client, err := queue.NewClient(e.rdb, cfg)
		must(t, err)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for j := w; j < n; j += 8 {
					if _, err := client.Enqueue(e.ctx, queue.NewRawTask("t", nil), queue.In(fmt.Sprintf("tenant-%04d", j))); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	register(e.cfg, 3000)
	register(small, 50)
	e.serve(dashboard.Options{Unauthenticated: true})
	smallInsp, err := queue.NewInspector(e.rdb, small)
	must(t, err)
	mounted := http.StripPrefix("/dash", newDashboard(t, smallInsp, dashboard.Options{Unauthenticated: true}))

	// view returns the commands Redis ran for one GET and the body's size
	view := func(get func() response) (int64, int) {
		t.Helper()
		get() // loads the scripts: a cold cache is no cost of a view
		must(t, e.rdb.ConfigResetStat(e.ctx).Err())
		r := get()
		if r.code != 200 && r.code != http.StatusNotFound {
			t.Fatalf("%d %.300s", r.code, r.body)
		}
		return commands(t, e.rdb), len(r.body)
	}
	for _, q := range []string{"tenant-0001", "tenant-2999"} {
		must(t, e.insp.SetLimits(e.ctx, q, queue.Limits{Concurrency: 7}))
	}
	must(t, smallInsp.SetLimits(e.ctx, "tenant-0001", queue.Limits{Concurrency: 7}))
	for _, path := range []string{"/", "/api/queues", "/limits", "/api/limits", "/queues/nope", "/find"} {
		bigCmds, bigSize := view(func() response { return e.get(path) })
		smallCmds, smallSize := view(func() response { return serveOnce(t, mounted, path) })
		t.Logf("%s: 3,000 queues: %d commands, %d bytes; 50 queues: %d commands, %d bytes", path, bigCmds, bigSize, smallCmds, smallSize)
		if bigCmds > smallCmds+4 || bigSize > smallSize+1024 {
			t.Errorf("%s over 3,000 queues: %d commands and %d bytes, want at most those of 50 queues (%d, %d)",
				path, bigCmds, bigSize, smallCmds, smallSize)
		}
	}

	// the limits of a later page
	var lim struct {
		Limits []struct{ Queue string }
		Next   string
	}
	e.get("/api/limits?after=tenant-2998").json(t, &lim)
	if len(lim.Limits) != 1 || lim.Limits[0].Queue != "tenant-2999" || lim.Next != "" {
		t.Fatalf("limits after tenant-2998: %+v", lim)
	}
	if r := e.page(t, "/limits"); !strings.Contains(r.body, `href="/dash/limits?after=tenant-0049" rel="next"`) {
		t.Fatalf("the limits page has no next page:\n%.2000s", r.body)
	}
	if r := e.get("/queues/nope"); !strings.Contains(r.body, "And 2,950 more") {
		t.Fatalf("the 404 page does not bound its list of queues:\n%.2000s", r.body)
	}

	// the pages cover every queue once, in order
	seen := map[string]bool{}
	after := ""
	for range 4 {
		var p struct {
			Queues  []struct{ Name string }
			Next    string
			Matched int
		}
		e.get("/api/queues?limit=1000&after="+url.QueryEscape(after)).json(t, &p)
		for _, q := range p.Queues {
			if seen[q.Name] || q.Name <= after {
				t.Fatalf("%s out of order or twice after %q", q.Name, after)
			}
			seen[q.Name] = true
		}
		if after = p.Next; after == "" || p.Matched != 3000 {
			break
		}
	}
	if len(seen) != 3000 {
		t.Fatalf("the API's pages held %d queues of 3,000", len(seen))
	}

	// the page links to the next, and a prefix finds a queue of any page
	r := e.page(t, "/")
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(r.body)
	if next == nil || !strings.Contains(r.body, "Queues 1–50 of 3,000") || !strings.Contains(r.body, "Total of this page") {
		t.Fatalf("no pager on the overview:\n%.2000s", r.body)
	}
	r = e.page(t, "/"+strings.ReplaceAll(next[1], "&amp;", "&"))
	if !strings.Contains(r.body, `data-queue="tenant-0050"`) || strings.Contains(r.body, `data-queue="tenant-0049"`) ||
		!strings.Contains(r.body, "Queues 51–100 of 3,000") {
		t.Fatalf("the next page does not start at tenant-0050:\n%.2000s", r.body)
	}
	r = e.page(t, "/?prefix=tenant-29")
	if n := strings.Count(r.body, `<tr data-queue="`); n != 50 || !strings.Contains(r.body, `data-queue="tenant-2900"`) ||
		!strings.Contains(r.body, "of 100") || !strings.Contains(r.body, `value="tenant-29"`) {
		t.Fatalf("prefix tenant-29: %d rows\n%.2000s", n, r.body)
	}
}

// commands sums the calls INFO commandstats counted since the last
// CONFIG RESETSTAT, leaving out those two.
func commands(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	must(t, err)
	var n int64
	for _, m := range regexp.MustCompile(`(?m)^cmdstat_([a-z|]+):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		if strings.HasPrefix(m[1], "config") || m[1] == "info" {
			continue
		}
		c, _ := strconv.ParseInt(m[2], 10, 64)
		n += c
	}
	return n
}

// serveOnce serves one GET of path by h, mounted under /dash as the
// env's server mounts its dashboard.
func serveOnce(t *testing.T, h http.Handler, path string) response {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/dash"+path, nil)
	r.Host = "localhost"
	h.ServeHTTP(w, r)
	return response{code: w.Code, header: w.Header(), body: w.Body.String()}
}

// TestQueueListPages: /api/queues pages queues by name: following next
// covers every queue once, in order, each page within its limit and
// counting the queues that match; a prefix narrows them; a page after
// the last is empty; a limit out of bounds is a bad request. (These were
// TestListQueues of the Inspector method this paging replaced.)
func TestQueueListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for j := range 120 {
		_, err := e.client.Enqueue(e.ctx, queue.NewRawTask("t", nil), queue.In(fmt.Sprintf("q%03d", j)))
		must(t, err)
	}
	_, err := e.client.Enqueue(e.ctx, queue.NewRawTask("t", nil), queue.In("other"))
	must(t, err)
	want, err := e.insp.Queues(e.ctx)
	must(t, err)
	e.serve(dashboard.Options{Unauthenticated: true})
	type page struct {
		Queues []struct {
			Queue   string `json:"name"`
			Pending int64  `json:"pending"`
		} `json:"queues"`
		Next    string `json:"next"`
		Matched int    `json:"matched"`
	}
	get := func(query string) page {
		t.Helper()
		r := e.get("/api/queues?" + query)
		if r.code != http.StatusOK {
			t.Fatalf("GET /api/queues?%s: %d %s", query, r.code, r.body)
		}
		var p page
		must(t, json.Unmarshal([]byte(r.body), &p))
		return p
	}
	var seen []string
	var pending int64
	for after, pages := "", 0; ; pages++ {
		p := get("limit=50&after=" + url.QueryEscape(after))
		if p.Matched != len(want) || len(p.Queues) > 50 {
			t.Fatalf("page %d: matched %d of %d, %d queues", pages, p.Matched, len(want), len(p.Queues))
		}
		for _, q := range p.Queues {
			seen = append(seen, q.Queue)
			pending += q.Pending
		}
		if p.Next == "" {
			break
		}
		if pages > 3 || p.Next != seen[len(seen)-1] {
			t.Fatalf("page %d: next %q after %q", pages, p.Next, seen[len(seen)-1])
		}
		after = p.Next
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) || pending != 121 {
		t.Fatalf("paged %d queues, %d pending: %v; want %v", len(seen), pending, seen, want)
	}
	if p := get("prefix=q11"); p.Matched != 10 || len(p.Queues) != 10 || p.Queues[0].Queue != "q110" || p.Next != "" {
		t.Fatalf("prefix q11: %+v", p)
	}
	if p := get("after=zzz"); len(p.Queues) != 0 || p.Next != "" || p.Matched != len(want) {
		t.Fatalf("after the last: %+v", p)
	}
	for _, bad := range []string{"limit=-1", "limit=0", fmt.Sprintf("limit=%d", inspect.MaxPageSize+1)} {
		if r := e.get("/api/queues?" + bad); r.code != http.StatusBadRequest {
			t.Errorf("GET /api/queues?%s: %d, want 400", bad, r.code)
		}
	}
}
