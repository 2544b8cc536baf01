package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

type apiTask struct {
	ID              string         `json:"id"`
	Queue           string         `json:"queue"`
	Type            string         `json:"type"`
	State           string         `json:"state"`
	Payload         map[string]any `json:"payload"`
	PayloadEncoding string         `json:"payload_encoding"`
	Attempts        int            `json:"attempts"`
	LastError       string         `json:"last_error"`
	Worker          string         `json:"worker"`
	EnqueuedAt      string         `json:"enqueued_at"`
	CancelRequested bool           `json:"cancel_requested"`
	Rank            int64          `json:"rank"`
}

type apiPage struct {
	Tasks []apiTask `json:"tasks"`
	Next  string    `json:"next"`
	Newer string    `json:"newer"`
}

func TestAPIReads(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})

	t.Run("Queues", func(t *testing.T) {
		var v struct {
			Queues []struct {
				Name                                               string
				Pending, Active, Scheduled, Retry, Dead, Succeeded int64
				Paused                                             bool
				LatencyMS                                          int64 `json:"latency_ms"`
			}
		}
		r := e.get("/api/queues")
		r.json(t, &v)
		if r.code != 200 || len(v.Queues) != 1 {
			t.Fatalf("%d %s", r.code, r.body)
		}
		q := v.Queues[0]
		if q.Name != e.q || q.Pending != 4 || q.Active != 2 || q.Scheduled != 3 || q.Retry != 3 || q.Dead != 5 || q.Succeeded != 2 || !q.Paused {
			t.Fatalf("queue %+v", q)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("content type %q", ct)
		}
		var one struct{ Name string }
		e.get("/api/queues/"+e.q).json(t, &one)
		if one.Name != e.q {
			t.Fatalf("one queue: %+v", one)
		}
	})

	t.Run("TasksOfEveryState", func(t *testing.T) {
		for state, want := range map[string][]string{
			"pending": e.pending, "active": e.active, "scheduled": e.scheduled,
			"retry": e.retry, "dead": e.dead, "succeeded": e.succeeded,
		} {
			got := e.listAll(t, state, 2, "")
			if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
				t.Fatalf("%s: %v, want %v", state, got, want)
			}
		}
		all := e.listAll(t, "recent", 4, "oldest")
		if len(all) != 19 {
			t.Fatalf("recent: %d tasks", len(all))
		}
	})

	t.Run("DeadNewestFirstByDefault", func(t *testing.T) {
		var p apiPage
		e.get("/api/queues/"+e.q+"/tasks?state=dead").json(t, &p)
		if len(p.Tasks) != 5 {
			t.Fatalf("dead %v", ids(p.Tasks))
		}
		for j, task := range p.Tasks {
			if task.Rank != int64(5-j) {
				t.Fatalf("dead task %d has rank %d: not newest first", j, task.Rank)
			}
			if task.LastError == "" || task.Attempts != 1 || task.State != "dead" {
				t.Fatalf("dead task %+v", task)
			}
		}
	})

	t.Run("Task", func(t *testing.T) {
		var task apiTask
		r := e.get("/api/queues/" + e.q + "/tasks/" + e.evil)
		r.json(t, &task)
		if r.code != 200 || task.State != "dead" || task.PayloadEncoding != "msgpack" || task.Payload["html"] != evilPayload || task.Payload["to"] != "ann@example.com" {
			t.Fatalf("%d %s", r.code, r.body)
		}
		var active apiTask
		e.get("/api/queues/"+e.q+"/tasks/"+e.active[0]).json(t, &active)
		if active.State != "active" || active.Worker != e.worker {
			t.Fatalf("active task %+v", active)
		}
	})

	t.Run("LiveTail", func(t *testing.T) {
		var first apiPage
		e.get("/api/queues/"+e.q+"/tasks?state=recent&limit=3").json(t, &first)
		if len(first.Tasks) != 3 || first.Newer == "" {
			t.Fatalf("first page %+v", first)
		}
		more := e.enqueue(5, "ok", queue.In(e.q))
		var tail apiPage
		e.get("/api/queues/"+e.q+"/tasks?state=recent&order=oldest&after="+url.QueryEscape(first.Newer)).json(t, &tail)
		if fmt.Sprint(ids(tail.Tasks)) != fmt.Sprint(more) {
			t.Fatalf("tail %v, want %v", ids(tail.Tasks), more)
		}
	})

	t.Run("History", func(t *testing.T) {
		for _, path := range []string{"/api/history", "/api/history?span=day", "/api/queues/" + e.q + "/history?span=hour"} {
			var h struct {
				Span        string
				StepSeconds int64 `json:"step_seconds"`
				Points      []struct{ Processed, Succeeded, Failed int64 }
			}
			r := e.get(path)
			r.json(t, &h)
			var processed, failed int64
			for _, p := range h.Points {
				processed += p.Processed
				failed += p.Failed
			}
			// 2 succeeded, 5 dead and 3 retrying attempts
			if r.code != 200 || processed != 10 || failed != 8 || (len(h.Points) != 60 && len(h.Points) != 24) {
				t.Fatalf("%s: %d, %d points, processed %d failed %d", path, r.code, len(h.Points), processed, failed)
			}
		}
	})

	t.Run("Workers", func(t *testing.T) {
		var v struct {
			Workers []struct {
				ID            string
				LastHeartbeat string `json:"last_heartbeat"`
				Tasks         []apiTask
			}
		}
		e.get("/api/workers").json(t, &v)
		if len(v.Workers) != 1 || v.Workers[0].ID != e.worker || len(v.Workers[0].Tasks) != 2 || v.Workers[0].LastHeartbeat == "" {
			t.Fatalf("workers %+v", v)
		}
	})

	t.Run("Schedules", func(t *testing.T) {
		var v struct {
			Schedules []struct{ Name, Spec, Queue, Type, Missed string }
		}
		e.get("/api/schedules").json(t, &v)
		if len(v.Schedules) != 1 || v.Schedules[0].Name != "nightly-digest" || v.Schedules[0].Spec != "0 3 * * *" || v.Schedules[0].Queue != "reports" ||
			v.Schedules[0].Missed != "skip" {
			t.Fatalf("schedules %+v", v)
		}
	})

	t.Run("Limits", func(t *testing.T) {
		if r := e.get("/api/limits"); r.code != 200 || !strings.Contains(r.body, `"limits": []`) {
			t.Fatalf("no limits: %d %s", r.code, r.body)
		}
		must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{Concurrency: 10, Rate: 600, Per: time.Minute}))
		var v struct {
			Limits []struct {
				Name, Queue, Kind string
				Max, Running      int64
				PerMS             int64 `json:"per_ms"`
			}
		}
		e.get("/api/limits").json(t, &v)
		if len(v.Limits) != 2 || v.Limits[0].Kind != "concurrency" || v.Limits[0].Max != 10 || v.Limits[0].Running != 2 ||
			v.Limits[1].Kind != "rate" || v.Limits[1].PerMS != 60_000 {
			t.Fatalf("limits %+v", v)
		}
		qi, err := e.insp.QueueInfo(e.ctx, e.q)
		must(t, err)
		must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{MaxDepth: 1000, GroupRate: 5, GroupMaxDepth: 9}))
		var w struct {
			Limits []struct {
				Kind    string
				Max     int64
				Waiting int64
				PerMS   int64 `json:"per_ms"`
			}
		}
		e.get("/api/limits").json(t, &w)
		if len(w.Limits) != 3 || w.Limits[0].Kind != "depth" || w.Limits[0].Max != 1000 ||
			w.Limits[0].Waiting != qi.Pending+qi.Waiting+qi.Scheduled+qi.Retry ||
			w.Limits[1].Kind != "group depth" || w.Limits[1].Max != 9 ||
			w.Limits[2].Kind != "group rate" || w.Limits[2].Max != 5 || w.Limits[2].PerMS != 1000 {
			t.Fatalf("depth and group rate limits %+v, queue %+v", w, qi)
		}
		must(t, e.insp.SetLimits(e.ctx, e.q, queue.Limits{}))
	})

	t.Run("Errors", func(t *testing.T) {
		for path, code := range map[string]int{
			"/api/queues/" + e.q + "/tasks?state=bogus":                400,
			"/api/queues/" + e.q + "/tasks?limit=0":                    400,
			"/api/queues/" + e.q + "/tasks?limit=5000":                 400,
			"/api/queues/" + e.q + "/tasks?order=sideways":             400,
			"/api/queues/" + e.q + "/tasks?after=garbage!":             400,
			"/api/queues/" + e.q + "/history?span=week":                400,
			"/api/queues/" + e.q + "/tasks/nope":                       404,
			"/api/queues/a%20b":                                        400,
			"/api/nothing-here":                                        404,
			"/api/queues/" + e.q + "/tasks?state=pending&order=newest": 400,
		} {
			r := e.get(path)
			var v struct{ Error string }
			r.json(t, &v)
			if r.code != code || v.Error == "" {
				t.Errorf("%s: %d %s, want %d with an error", path, r.code, r.body, code)
			}
		}
		if r := e.get("/queues/" + e.q + "/pause"); r.code != http.StatusMethodNotAllowed {
			t.Errorf("GET of an action: %d", r.code)
		}
	})
}

// listAll pages a state's tasks through the API.
func (e *env) listAll(t *testing.T, state string, limit int, order string) []string {
	t.Helper()
	var out []string
	after := ""
	for range 100 {
		var p apiPage
		r := e.get(fmt.Sprintf("/api/queues/%s/tasks?state=%s&limit=%d&order=%s&after=%s", e.q, state, limit, order, url.QueryEscape(after)))
		if r.code != 200 {
			t.Fatalf("%s: %d %s", state, r.code, r.body)
		}
		r.json(t, &p)
		out = append(out, ids(p.Tasks)...)
		if len(p.Tasks) < limit {
			return out
		}
		after = p.Next
	}
	t.Fatal("paging never ended")
	return nil
}

func ids(ts []apiTask) []string {
	out := make([]string, len(ts))
	for j, t := range ts {
		out[j] = t.ID
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestAPIActions(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	tok := e.csrf()
	post := func(path string) response {
		t.Helper()
		return e.do(http.MethodPost, path, nil, "X-CSRF-Token", tok)
	}
	qp := "/api/queues/" + e.q

	// resume and pause a queue no worker serves: between the two, the
	// worker would run e.q's pending tasks, and a busy machine gave it
	// the time (TestAPIActions failed so once)
	idle := "digests"
	_, err := e.client.Enqueue(e.ctx, queue.NewRawTask("ok", nil), queue.In(idle))
	must(t, err)
	must(t, e.insp.Pause(e.ctx, idle))
	paused := func() bool {
		qi, err := e.insp.QueueInfo(e.ctx, idle)
		must(t, err)
		return qi.Paused
	}
	if r := post("/api/queues/" + idle + "/resume"); r.code != 200 || paused() {
		t.Fatalf("resume: %d %s", r.code, r.body)
	}
	if r := post("/api/queues/" + idle + "/pause"); r.code != 200 || !paused() {
		t.Fatalf("pause: %d %s", r.code, r.body)
	}
	if r := post(qp + "/tasks/" + e.dead[1] + "/run"); r.code != 200 || !strings.Contains(r.body, `"action": "run"`) {
		t.Fatalf("run: %d %s", r.code, r.body)
	}
	if r := post(qp + "/tasks/" + e.retry[0] + "/delete"); r.code != 200 {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	if r := post(qp + "/tasks/" + e.active[0] + "/cancel"); r.code != 200 {
		t.Fatalf("cancel: %d %s", r.code, r.body)
	}
	var task apiTask
	e.get(qp+"/tasks/"+e.active[0]).json(t, &task)
	if !task.CancelRequested {
		t.Fatalf("cancel not shown: %+v", task)
	}
	qi := e.info()
	if qi.Dead != 4 || qi.Retry != 2 || qi.Pending != 5 {
		t.Fatalf("after actions: %+v", qi)
	}
	for path, code := range map[string]int{
		qp + "/tasks/" + e.pending[0] + "/run":    409,
		qp + "/tasks/" + e.pending[0] + "/cancel": 409,
		qp + "/tasks/nope/delete":                 404,
		qp + "/run-all?state=pending":             400,
		qp + "/delete-all":                        400,
	} {
		if r := post(path); r.code != code || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", path, r.code, r.body, code)
		}
	}
	r := post(qp + "/run-all?state=scheduled")
	if r.code != 200 || !strings.Contains(r.body, `"count": 3`) {
		t.Fatalf("run-all: %d %s", r.code, r.body)
	}
	r = e.do(http.MethodPost, qp+"/delete-all", url.Values{"state": {"dead"}}, "X-CSRF-Token", tok)
	if r.code != 200 || !strings.Contains(r.body, `"count": 4`) {
		t.Fatalf("delete-all: %d %s", r.code, r.body)
	}
	if qi := e.info(); qi.Dead != 0 || qi.Scheduled != 0 || qi.Pending != 8 {
		t.Fatalf("after bulk actions: %+v", qi)
	}
	// the backlog of the paused queue: 8 pending tasks
	r = e.do(http.MethodPost, qp+"/delete-all", url.Values{"state": {"pending"}}, "X-CSRF-Token", tok)
	if r.code != 200 || !strings.Contains(r.body, `"count": 8`) {
		t.Fatalf("delete-all pending: %d %s", r.code, r.body)
	}
	if qi := e.info(); qi.Pending != 0 || qi.Active != 2 {
		t.Fatalf("after deleting the pending tasks: %+v", qi)
	}
}
