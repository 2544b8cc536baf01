package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestBrowserOverviewFigures: 3,000 tasks succeed, none kept, and 4 die.
// In Chromium the overview's chart draws the 4 failures visibly beside
// the 3,000 (raised to the least height, which the legend explains), its
// y axis names its unit, the queue's row shows succeeded kept (0) and all
// time (3,000) apart under a note on retention, and latency has a unit.
func TestBrowserOverviewFigures(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := newEnv(t)
	e.q = "mail"
	mux := worker.NewMux()
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("die", func(context.Context, *worker.Task) error { return worker.SkipRetry(errors.New("bounced")) })
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg, Queues: map[string]int{e.q: 1}, Concurrency: 8}, mux)
	must(t, err)
	must(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e.enqueue(3000, "ok", queue.In(e.q))
	e.enqueue(4, "die", queue.In(e.q))
	e.waitCounts("every task to finish", func(qi *queue.QueueInfo) bool {
		return qi.SucceededTotal == 3000 && qi.Dead == 4
	})
	e.serve(dashboard.Options{Unauthenticated: true})
	b := startBrowser(t, path).in(t)
	b.navigate(e.srv.URL + "/dash/")
	b.waitFor("the queue row", `document.querySelector('tr[data-queue="mail"]')`)

	// the failures' bar part, as Chromium lays it out, in CSS pixels
	raw := b.eval(`JSON.stringify(Array.from(document.querySelectorAll("figure.chart g[data-failed]")).filter(function (g) {
		return g.dataset.failed !== "0" }).map(function (g) {
		return {raised: g.classList.contains("raised"), h: g.querySelector("rect.failed").getBoundingClientRect().height} }))`)
	var failed []struct {
		Raised bool
		H      float64
	}
	mustJSON(t, raw, &failed)
	if len(failed) == 0 {
		t.Fatal("no bar counts the failures")
	}
	for _, f := range failed {
		if !f.Raised || f.H < 2.5 {
			t.Fatalf("4 failures beside 3,000 successes drawn %v px tall (raised %v)", f.H, f.Raised)
		}
	}
	for sel, want := range map[string]string{
		"figure.chart text.yunit": "tasks per minute",
		"#chart-failed":           "4",
		`tr[data-queue="mail"] [data-col="succeeded-kept"]`:  "0",
		`tr[data-queue="mail"] [data-col="succeeded-total"]`: "3,000",
	} {
		if got := b.eval(`document.querySelector(` + fmt.Sprintf("%q", sel) + `).textContent.trim()`); got != want {
			t.Fatalf("%s reads %q, want %q", sel, got, want)
		}
	}
	if b.eval(`!!document.getElementById("chart-raised") && document.getElementById("succeeded-note").textContent.includes("Retention")`) != true {
		t.Fatal("the chart or the table does not explain itself")
	}
	if got := b.eval(`document.querySelector('tr[data-queue="mail"] [data-col="latency"]').textContent.trim()`); got != "0s" {
		t.Fatalf("latency reads %q, want 0s", got)
	}
	b.screenshot("overview-figures")
	t.Logf("screenshots in %s", b.shots)
}

// mustJSON decodes the JSON text a page's script returned into v.
func mustJSON(t *testing.T, raw any, v any) {
	t.Helper()
	s, _ := raw.(string)
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %q", err, s)
	}
}
