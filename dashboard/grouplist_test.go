package dashboard_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/shardq/shardq/dashboard"
)

// TestBrowserGroupColumn: in Chromium, a queue's pending tab shows each
// task's group in a column of its own, before the payload; a group's
// link and the Group filter list that group's tasks alone, a page of the
// page size at a time with a next link that reads on; a group named with
// markup stays text.
func TestBrowserGroupColumn(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setupGroups(t, dashboard.Options{Unauthenticated: true, PageSize: 4})
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash/queues/" + e.q

	// the payload, "<group>/old/<n>", names the group each row must show
	rows := func() []string {
		raw, _ := b.eval(`Array.from(document.querySelectorAll("table#tasks tbody tr[data-id]")).map(function (tr) {
			return tr.querySelector("td.group").textContent + "|" + tr.querySelector("td.payload").textContent }).join("\n")`).(string)
		if raw == "" {
			return nil
		}
		return strings.Split(raw, "\n")
	}
	check := func(want string, n int) {
		t.Helper()
		got := rows()
		if len(got) != n {
			t.Fatalf("%d rows, want %d: %q", len(got), n, got)
		}
		for _, r := range got {
			group, payload, _ := strings.Cut(r, "|")
			payload = strings.TrimPrefix(payload, `"`) // a JSON string
			if !strings.HasPrefix(payload, group+"/") || want != "" && group != want {
				t.Fatalf("row %q: group column %q (want %q)", r, group, want)
			}
		}
	}
	b.navigate(base + "?limit=20")
	b.waitFor("the pending tab", `document.querySelector('table#tasks[data-state="pending"] tr[data-id]')`)
	if got := b.eval(`Array.from(document.querySelectorAll("table#tasks thead th")).map(function (th) { return th.textContent }).slice(1, 4).join(",")`); got != "Type,Group,Payload" {
		t.Fatalf("columns %v", got)
	}
	check("", 13)
	b.screenshot("queue-pending-groups")

	// a group's link filters the tab: acme has 6, a page holds 4
	b.click(`table#tasks td.group a[href*="group=acme"]`)
	b.waitFor("acme's tasks", `document.readyState === "complete" && location.search.includes("group=acme") && document.getElementById("group-scope")`)
	check("acme", 4)
	b.screenshot("queue-pending-group-acme")
	b.click(`.pager a[rel="next"]`)
	b.waitFor("acme's next page", `document.readyState === "complete" && location.search.includes("after=")`)
	check("acme", 2)
	if b.eval(`!!document.querySelector('.pager a[rel="next"]')`) != false {
		t.Fatal("the last page of acme links to a next one")
	}

	// the filter form, with a group whose name is markup
	b.navigate(base)
	b.eval(`(function(){ var f = document.getElementById("group-filter"); f.group.value = ` + jsString(evilGroup) + `; f.submit(); return true })()`)
	b.waitFor("the evil group's task", `document.readyState === "complete" && location.search.includes("group=") && document.querySelector("table#tasks tr[data-id]")`)
	check(evilGroup, 1)
	if n := b.eval(`document.querySelectorAll("#tasks i, #group-filter i").length`); n != float64(0) {
		t.Fatal("a group's name became markup")
	}
	if got := b.eval(`new URLSearchParams(location.search).get("group")`); got != evilGroup {
		t.Fatalf("the filter sent %v", got)
	}

	var page struct{ Tasks []struct{ Group string } }
	r := e.get("/api/queues/" + e.q + "/tasks?group=" + url.QueryEscape("initech"))
	r.json(t, &page)
	if len(page.Tasks) != 2 || page.Tasks[0].Group != "initech" {
		t.Fatalf("API group filter: %s", r.body)
	}
	if d := b.dialogsSeen(); len(d) > 0 {
		t.Fatalf("JavaScript dialogs opened: %q", d)
	}
	t.Logf("screenshots in %s", b.shots)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "<", `\x3c`).Replace(s) + "'"
}
