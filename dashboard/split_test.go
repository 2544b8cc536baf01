package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestBrowserLeasedAhead: a worker of 2 slots with quick handlers leases
// tasks ahead of its slots (prefetch); then two tasks block both slots,
// and the tasks leased ahead wait in it. The queue page shows 2 handlers
// running and the tasks ahead apart, as the worker reports them; so does
// the Groups tab for each group, by the groups the worker reports its
// tasks ahead in, and the API's groups answer the same.
func TestBrowserLeasedAhead(t *testing.T) {
	path := requireChromium(t)
	t.Parallel()
	e := newEnv(t)
	e.q = "tenants"
	const quick = 60
	var started atomic.Int64
	release := make(chan struct{})
	srv, err := worker.NewServer(e.redis.Client(t), worker.Config{Config: e.cfg, Queues: map[string]int{e.q: 1},
		Concurrency: 2, Prefetch: 6, Heartbeat: 100 * time.Millisecond, WorkerID: "w-ahead"},
		worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
			if task.Type == "quick" {
				return nil
			}
			started.Add(1)
			select { // a hold task keeps its slot until the test ends
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}))
	must(t, err)
	t.Cleanup(func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	var tasks []*queue.Task
	for j := range quick {
		tasks = append(tasks, queue.NewRawTask("quick", nil, queue.Group([]string{"acme", "globex"}[j%2])))
	}
	for j := range 40 {
		tasks = append(tasks, queue.NewRawTask("hold", fmt.Appendf(nil, "%d", j), queue.Group([]string{"acme", "globex"}[j%2])))
	}
	_, err = e.client.EnqueueMany(e.ctx, tasks, queue.In(e.q))
	must(t, err)
	must(t, srv.Start(context.Background()))

	// both slots blocked, and tasks leased ahead waiting behind them, as
	// the active lists show them and the heartbeat reports them: the lists
	// also hold quick tasks that finished and whose acks wait for the
	// flusher, so the two agree only once those are written
	var busy, ahead, reported int
	waitUntil(t, "two running and some leased ahead, the lists and the heartbeat agreeing", func() bool {
		ws, err := e.insp.Workers(e.ctx)
		must(t, err)
		for _, w := range ws {
			if w.ID == "w-ahead" {
				busy, ahead, reported = w.Busy, w.Ahead, w.Work[e.q].Ahead
			}
		}
		return started.Load() == 2 && busy == 2 && ahead > 0 && reported == ahead
	})
	e.serve(dashboard.Options{Unauthenticated: true})
	b := startBrowser(t, path).in(t)
	base := e.srv.URL + "/dash"

	// the heartbeat publishes the split within 100ms; the page reads it.
	// A fetcher may still lease ahead up to Prefetch meanwhile, so what
	// the page must show is read again beside it, once lists and heartbeat
	// agree
	split := `"running=" + document.getElementById("running").textContent + " ahead=" + document.getElementById("ahead").textContent`
	deadline := time.Now().Add(15 * time.Second)
	for {
		b.navigate(base + "/queues/" + e.q + "?state=active")
		got := b.eval(split)
		ws, err := e.insp.Workers(e.ctx)
		must(t, err)
		for _, w := range ws {
			if w.ID == "w-ahead" && w.Busy == 2 && w.Work[e.q].Ahead == w.Ahead {
				ahead = w.Ahead
			}
		}
		want := fmt.Sprintf("running=2 ahead=%d", ahead)
		if got == want {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the queue page shows %v, want %s", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := b.eval(`document.querySelector('nav.tabs a[data-state="active"] .count').textContent`); n != strconv.Itoa(2+ahead) {
		t.Fatalf("the active tab counts %v, want %d: running and ahead", n, 2+ahead)
	}
	b.screenshot("queue-active-ahead")

	// each group's row splits its leased tasks as the heartbeat does: read
	// beside the heartbeat until both agree, as above
	type row struct{ Running, Ahead int }
	var rows map[string]row
	var byGroup map[string]int
	deadline = time.Now().Add(15 * time.Second)
	for {
		b.navigate(base + "/queues/" + e.q + "/groups")
		b.waitFor("the Groups tab", `document.readyState === "complete" && document.querySelector("table#groups tr[data-group]")`)
		got := b.eval(`JSON.stringify(Object.fromEntries(Array.from(document.querySelectorAll("table#groups tr[data-group]")).map(function (tr) {
			return [tr.dataset.group, {Running: Number(tr.querySelector('[data-col="running"]').textContent), Ahead: Number(tr.querySelector('[data-col="ahead"]').textContent)}]
		})))`).(string)
		rows = map[string]row{}
		must(t, json.Unmarshal([]byte(got), &rows))
		ws, err := e.insp.Workers(e.ctx)
		must(t, err)
		for _, w := range ws {
			if w.ID == "w-ahead" && w.Busy == 2 {
				byGroup, ahead = w.Work[e.q].AheadGroups, w.Work[e.q].Ahead
			}
		}
		var running, ahead2 int
		agree := true
		for g, r := range rows {
			running, ahead2 = running+r.Running, ahead2+r.Ahead
			agree = agree && r.Ahead == byGroup[g]
		}
		if agree && running == 2 && ahead2 == ahead && ahead > 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the groups tab shows %v; the worker reports 2 running and %d ahead, by group %v", rows, ahead, byGroup)
		}
		time.Sleep(100 * time.Millisecond)
	}
	head := b.eval(`document.querySelector("table#groups thead").textContent`).(string)
	note := b.eval(`document.getElementById("group-split").textContent`).(string)
	if !contains(head, "Running", "Ahead", "prefetched") || !contains(note, "leased ahead", "heartbeat") {
		t.Fatalf("the Groups tab reads %q / %q", head, note)
	}
	b.screenshot("queue-groups-split")

	// the API splits a group the same way: running + ahead = leased, read
	// again until the leases hold still between the two reads
	for g := range rows {
		var v struct{ Running, Ahead int64 }
		var gi *queue.GroupInfo
		waitUntil(t, "the API's group "+g+" to split its leased tasks", func() bool {
			e.get("/api/queues/"+e.q+"/groups/"+g).json(t, &v)
			gi, err = e.insp.GetGroup(e.ctx, e.q, g)
			must(t, err)
			return v.Running+v.Ahead == gi.Running
		})
	}
}

// contains reports whether s holds every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
