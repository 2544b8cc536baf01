package dashboard_test

import (
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
)

// TestSearchPage: search by error text in dead and retrying tasks, by
// type and by ID prefix, on the page and in the API; the page says what is
// searchable and how far back, and a search without a filter is refused.
func TestSearchPage(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	r := e.get("/search?queue=" + e.q + "&state=retry&error=SMTP+BUSY")
	if r.code != 200 || !strings.Contains(r.body, "3 found in 3 tasks read") || !strings.Contains(r.body, `id="search-scope"`) {
		t.Fatalf("by error text: %d\n%s", r.code, r.body)
	}
	for _, id := range e.retry {
		if !strings.Contains(r.body, `data-id="`+id+`"`) {
			t.Fatalf("retry task %s missing from the results", id)
		}
	}
	r = e.get("/search?queue=" + e.q + "&state=dead&error=onerror")
	if !strings.Contains(r.body, "5 found") || strings.Contains(r.body, `<img src=x`) {
		t.Fatalf("dead by error text, escaped:\n%s", r.body)
	}
	var api struct {
		Tasks []struct {
			ID   string
			Type string
		}
		Scanned int
		Next    string
	}
	e.get("/api/queues/"+e.q+"/search?type=block&state=active").json(t, &api)
	if len(api.Tasks) != 2 || api.Tasks[0].Type != "block" {
		t.Fatalf("API by type: %+v", api)
	}
	e.get("/api/queues/"+e.q+"/search?state=recent&id="+e.evil[:24]).json(t, &api)
	if len(api.Tasks) != 1 || api.Tasks[0].ID != e.evil {
		t.Fatalf("API by ID prefix %s: %+v", e.evil[:24], api)
	}
	if r := e.get("/api/queues/" + e.q + "/search?state=dead"); r.code != 400 {
		t.Fatalf("no filter: %d", r.code)
	}
	if r := e.get("/api/queues/typo/search?type=x"); r.code != 404 {
		t.Fatalf("unknown queue: %d", r.code)
	}
}
