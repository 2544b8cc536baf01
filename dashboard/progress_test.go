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
	e := setup(t, dashboard.Options{})
	must(t, e.insp.ResumeQueue(e.ctx, e.q))
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
