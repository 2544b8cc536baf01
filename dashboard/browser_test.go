package dashboard_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestBrowser drives the dashboard in headless Chromium: load the
// overview, page through its queues and filter them by name, open a
// queue's dead tab, retry a task and see it leave the tab,
// watch the live tail show new tasks, and save a screenshot of each page
// (under -artifacts' output directory, else a temporary one). Chromium is
// found on PATH (Debian: apt-get install -y chromium) or at
// $SHARDQ_CHROMIUM.
func TestBrowser(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true, TailInterval: 200 * time.Millisecond, RefreshInterval: 300 * time.Millisecond})
	must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{Concurrency: 10, Rate: 600, Per: time.Minute}))
	page := startBrowser(t, path)
	base := e.srv.URL + "/dash"

	t.Run("Overview", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/")
		b.waitFor("the queue row", `document.querySelector('tr[data-queue="emails"]')`)
		if got := b.eval(`document.querySelectorAll("figure.chart svg rect.ok").length`); got != float64(60) {
			t.Fatalf("chart bars: %v", got)
		}
		b.screenshot("overview")
	})

	retried := e.dead[2]
	t.Run("RetryFromDeadTab", func(t *testing.T) {
		b := page.in(t)
		b.click(`tr[data-queue="emails"] a[href$="?state=dead"]`)
		b.waitFor("the dead tab", `document.querySelector('table#tasks[data-state="dead"]')`)
		if n := b.eval(`document.querySelectorAll("table#tasks tbody tr[data-id]").length`); n != float64(5) {
			t.Fatalf("dead tab shows %v tasks, want 5", n)
		}
		b.screenshot("queue-dead")
		b.click(`tr[data-id="` + retried + `"] button[data-action="run"]`)
		b.waitFor("the page after the retry", `location.search.includes("done=run")`)
		// the redirected page may still be parsing when its URL reads done=run:
		// count its rows only once it is whole
		b.waitFor("the task to leave the tab", `document.readyState === "complete" && document.querySelector('table#tasks[data-state="dead"]') && !document.querySelector('tr[data-id="`+retried+`"]')`)
		if n := b.eval(`document.querySelectorAll("table#tasks tbody tr[data-id]").length`); n != float64(4) {
			t.Fatalf("dead tab shows %v tasks after the retry, want 4", n)
		}
		if msg := b.eval(`document.querySelector(".flash").textContent`); msg != "Task queued to run now." {
			t.Fatalf("flash %q", msg)
		}
		b.screenshot("queue-dead-after-retry")
		ti, err := e.insp.GetTask(e.ctx, e.q, retried)
		must(t, err)
		if ti.State != queue.StatePending {
			t.Fatalf("retried task is %s", ti.State)
		}
	})

	t.Run("TaskPageShowsPayloadAsText", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/queues/" + e.q + "/tasks/" + e.evil)
		b.waitFor("the payload", `document.getElementById("payload")`)
		payload, _ := b.eval(`document.getElementById("payload").textContent`).(string)
		var v map[string]any
		if err := json.Unmarshal([]byte(payload), &v); err != nil || v["html"] != evilPayload {
			t.Fatalf("payload shown as %q", payload)
		}
		if n := b.eval(`document.scripts.length`); n != float64(1) {
			t.Fatalf("%v scripts in the page: the payload became markup", n)
		}
		b.screenshot("task")
	})

	t.Run("LiveTail", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/queues/" + e.q + "?state=recent")
		b.waitFor("the live tail", `document.getElementById("live-tail")`)
		fresh := e.enqueue(3, "ok", queue.In(e.q))
		cond := make([]string, len(fresh))
		for j, id := range fresh {
			cond[j] = `document.querySelector('tr[data-id="` + id + `"]')`
		}
		b.waitFor("the new tasks in the tail", strings.Join(cond, " && "))
		first := b.eval(`document.querySelector("table#tasks tbody tr").dataset.id`)
		if first != fresh[2] {
			t.Fatalf("newest row is %v, want %s", first, fresh[2])
		}
		b.screenshot("queue-recent-live")
	})

	t.Run("OtherPages", func(t *testing.T) {
		b := page.in(t)
		for _, p := range []struct{ name, path, cond string }{
			{"queue-pending", "/queues/" + e.q, `document.querySelector('table#tasks[data-state="pending"] tr[data-id]')`},
			{"queue-active", "/queues/" + e.q + "?state=active", `document.querySelector('button[data-action="cancel"]')`},
			{"queue-scheduled", "/queues/" + e.q + "?state=scheduled", `document.querySelector('button[data-action="run"]')`},
			{"queue-retry", "/queues/" + e.q + "?state=retry", `document.querySelector('td.error')`},
			{"queue-succeeded", "/queues/" + e.q + "?state=succeeded", `document.querySelector('tr[data-id]')`},
			{"workers", "/workers", `document.querySelector('tr[data-worker="` + e.worker + `"]')`},
			{"schedules", "/schedules", `document.body.textContent.includes("nightly-digest")`},
			{"limits", "/limits", `document.querySelector("table.limits")`},
			{"find", "/find", `document.querySelector("form.find")`},
		} {
			b.navigate(base + p.path)
			b.waitFor(p.name, p.cond)
			b.screenshot(p.name)
		}
	})

	t.Run("FindByID", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/find")
		b.eval(fmt.Sprintf(`(function(){ var f = document.querySelector("form.find");
			f.queue.value = %q; f.id.value = %q; f.submit(); return true })()`, e.q, e.retry[0]))
		b.waitFor("the task page", `location.pathname.endsWith("/tasks/`+e.retry[0]+`")`)
	})

	t.Run("AutoRefreshAndAlarm", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/")
		b.waitFor("the overview", `document.getElementById("auto-refresh")`)
		b.eval(`document.body.dataset.loaded = "1"; true`) // gone if the page reloads
		e.enqueue(2, "ok", queue.In("arrivals"))           // a queue no worker serves
		b.waitFor("the new queue's row, refreshed in place",
			`document.querySelector('tr[data-queue="arrivals"]') && document.body.dataset.loaded === "1"`)
		b.waitFor("its no-workers alarm", `document.querySelector('[data-alarm="no-workers"][data-queue="arrivals"]')`)
		b.screenshot("overview-alarm")
		// paused: nothing changes on the page
		b.click("#auto-refresh")
		b.eval(`document.body.dataset.refreshed = "paused"; true`)
		e.enqueue(1, "ok", queue.In("unseen"))
		time.Sleep(time.Second)
		if got := b.eval(`!!document.querySelector('tr[data-queue="unseen"]') || document.body.dataset.refreshed !== "paused"`); got != false {
			t.Fatal("the page refreshed while paused")
		}
		b.click("#auto-refresh")
		b.waitFor("the refresh to resume", `document.querySelector('tr[data-queue="unseen"]')`)
	})

	t.Run("QueuePages", func(t *testing.T) {
		b := page.in(t)
		e.enqueue(1, "ok", queue.In("arrivals")) // there since AutoRefreshAndAlarm, unless run alone
		e.enqueue(1, "ok", queue.In("unseen"))
		b.navigate(base + "/?limit=1") // a page per queue: arrivals, emails, ...
		b.waitFor("the first page", `document.querySelector('tr[data-queue="arrivals"]') && document.getElementById("queue-pager")`)
		b.click(`#queue-pager a[rel="next"]`)
		b.waitFor("the second page", `location.search.includes("after=arrivals") && document.readyState === "complete" && document.querySelector('tr[data-queue="emails"]')`)
		if n := b.eval(`document.querySelectorAll("table.queues tbody tr[data-queue]").length`); n != float64(1) {
			t.Fatalf("the second page shows %v queues, want 1", n)
		}
		b.screenshot("overview-page-2")
		b.eval(`(function(){ var f = document.getElementById("queue-search"); f.prefix.value = "uns"; f.submit(); return true })()`)
		b.waitFor("the queues named uns...", `location.search.includes("prefix=uns") && document.readyState === "complete" && document.querySelector('tr[data-queue="unseen"]')`)
		if n := b.eval(`document.querySelectorAll("table.queues tbody tr[data-queue]").length`); n != float64(1) {
			t.Fatalf("the prefix uns shows %v queues, want 1", n)
		}
	})

	t.Run("BulkRetry", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/queues/" + e.q + "?state=dead")
		b.waitFor("the dead tab", `document.getElementById("bulk")`)
		picked := []string{e.dead[3], e.dead[4]}
		for _, id := range picked {
			b.click(`input.select[value="` + id + `"]`)
		}
		if n := b.eval(`document.getElementById("selected-count").textContent`); n != "2 selected" {
			t.Fatalf("count %v", n)
		}
		b.click(`button[data-bulk="run"]`)
		b.waitFor("the page after the bulk retry", `location.search.includes("done=bulk")`)
		b.waitFor("both tasks to leave the dead tab",
			`!document.querySelector('tr[data-id="`+picked[0]+`"]') && !document.querySelector('tr[data-id="`+picked[1]+`"]')`)
		if msg := b.eval(`document.querySelector(".flash").textContent`); msg != "2 tasks changed." {
			t.Fatalf("flash %q", msg)
		}
		b.screenshot("queue-dead-after-bulk")
	})

	t.Run("Search", func(t *testing.T) {
		b := page.in(t)
		b.navigate(base + "/search")
		b.waitFor("the search form", `document.getElementById("search")`)
		b.eval(fmt.Sprintf(`(function(){ var f = document.getElementById("search");
			f.queue.value = %q; f.state.value = "retry"; f.error.value = "smtp"; f.submit(); return true })()`, e.q))
		b.waitFor("the results", `document.getElementById("results")`)
		if n := b.eval(`document.querySelectorAll("#results tbody tr[data-id]").length`); n != float64(len(e.retry)) {
			t.Fatalf("%v results", n)
		}
		b.screenshot("search")
	})

	if d := page.dialogsSeen(); len(d) > 0 {
		t.Fatalf("JavaScript dialogs opened: %q", d)
	}
	t.Logf("screenshots in %s", page.shots)
}

// requireChromium returns the path of Chromium, or skips the test without
// it; under make test (BROWSER_TEST_REQUIRED) a missing one fails it.
func requireChromium(t *testing.T) string {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("BROWSER_TEST_REQUIRED") != "" {
			// make test checked for it; a browser that vanished since is a failure, not a skip
			t.Fatal("chromium not found on PATH (apt-get install -y chromium, or set SHARDQ_CHROMIUM)")
		}
		t.Skip("chromium not found on PATH (apt-get install -y chromium, or set SHARDQ_CHROMIUM): the browser test did not run")
	}
	return path
}
