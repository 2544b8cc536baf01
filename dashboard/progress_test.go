package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// TestTaskProgressAndResult: the task page and the JSON API show a
// handler's progress and result, escaped.
func TestTaskProgressAndResult(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	must(t, e.insp.Resume(e.ctx, e.q))
	id := e.enqueue(1, "report", queue.In(e.q), queue.Retention(time.Hour))[0]
	res, err := e.insp.WaitResult(e.ctx, e.q, id)
	if err != nil || string(res) != `{"thumbnails": 3}` {
		t.Fatalf("WaitResult: %q, %v", res, err)
	}
	r := e.get("/queues/" + e.q + "/tasks/" + id)
	for _, want := range []string{`<progress max="100" value="60">`, "halfway &lt;b&gt;there&lt;/b&gt;", `id="result">{&#34;thumbnails&#34;: 3}`} {
		if r.code != 200 || !strings.Contains(r.body, want) {
			t.Fatalf("task page lacks %q:\n%s", want, r.body)
		}
	}
	var v struct {
		Progress struct {
			Percent int
			Message string
		}
		Result *string
	}
	e.get("/api/queues/"+e.q+"/tasks/"+id).json(t, &v)
	if v.Progress.Percent != 60 || v.Progress.Message != "halfway <b>there</b>" || v.Result == nil || *v.Result != `{"thumbnails": 3}` {
		t.Fatalf("API: %+v", v)
	}
}

// TestTaskSteps: the task page and the JSON API show the steps a
// handler finished, in order, with their values decoded and escaped.
func TestTaskSteps(t *testing.T) {
	t.Parallel()
	e := setup(t, dashboard.Options{Unauthenticated: true})
	must(t, e.insp.Resume(e.ctx, e.q))
	id := e.enqueue(1, "steps", queue.In(e.q), queue.Retention(time.Hour))[0]
	waitUntil(t, "the steps task to succeed", func() bool {
		ti, err := e.insp.GetTask(e.ctx, e.q, id)
		return err == nil && ti.State == queue.StateSucceeded
	})
	r := e.get("/queues/" + e.q + "/tasks/" + id)
	for _, want := range []string{`<table id="steps">`, "<td>charge &lt;card&gt;</td>", "&#34;receipt&#34;: &#34;r-&lt;1&gt;&#34;", "<td>mail</td>", "&#34;sent&#34;"} {
		if r.code != 200 || !strings.Contains(r.body, want) {
			t.Fatalf("task page lacks %q:\n%s", want, r.body)
		}
	}
	if strings.Index(r.body, "charge &lt;card&gt;") > strings.Index(r.body, "<td>mail</td>") {
		t.Error("the steps are not in the order they finished")
	}
	var v struct {
		Steps []struct {
			Name       string
			FinishedAt string `json:"finished_at"`
			Value      any
		}
	}
	e.get("/api/queues/"+e.q+"/tasks/"+id).json(t, &v)
	if len(v.Steps) != 2 || v.Steps[0].Name != "charge <card>" || v.Steps[1].Name != "mail" || v.Steps[1].Value != "sent" || v.Steps[0].FinishedAt == "" {
		t.Fatalf("API steps: %+v", v.Steps)
	}
	if m, ok := v.Steps[0].Value.(map[string]any); !ok || m["receipt"] != "r-<1>" || m["cents"] != float64(1250) {
		t.Fatalf("API step value: %#v", v.Steps[0].Value)
	}
}
