package dashboard

import (
	"fmt"
	"github.com/shardq/shardq/internal/inspect"
	"net/http"
	"strconv"
	"strings"

	"github.com/shardq/shardq/queue"
)

// searchData is the search page's form and results.
type searchData struct {
	Queues   []string
	Query    queue.TaskQuery
	Searched bool
	Result   *queue.TaskPage
	Scan     int
	States   []queue.State
}

// searchQuery reads a search from the request's query.
func searchQuery(r *http.Request) (queue.TaskQuery, error) {
	v := r.URL.Query()
	q := queue.TaskQuery{Queue: strings.TrimSpace(cmpOrQ(r.PathValue("queue"), v.Get("queue"))),
		State: queue.State(v.Get("state")), Type: strings.TrimSpace(v.Get("type")), Error: strings.TrimSpace(v.Get("error")),
		IDPrefix: strings.TrimSpace(v.Get("id")), After: v.Get("after")}
	for name, dst := range map[string]*int{"limit": &q.Limit, "scan": &q.Scan} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return q, fmt.Errorf("%w: %s=%q: want a positive number", errBadRequest, name, s)
			}
			*dst = n
		}
	}
	return q, nil
}

func cmpOrQ(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// searchPage finds tasks by type, error text or ID prefix, a bounded scan
// per request, with a link to search further back.
func (d *server) searchPage(w http.ResponseWriter, r *http.Request) {
	q, err := searchQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := searchData{Query: q, Scan: inspect.MaxSearchScan,
		States: []queue.State{stateRecent, queue.StateDead, queue.StateRetry, queue.StateSucceeded, queue.StateScheduled, queue.StateActive, queue.StatePending}}
	data.Queues, _ = d.insp.Queues(r.Context())
	if q.Queue != "" && (q.Type != "" || q.Error != "" || q.IDPrefix != "") {
		if data.Result, err = d.insp.ListTasks(r.Context(), q); err != nil {
			d.fail(w, r, err)
			return
		}
		data.Searched = true
	}
	d.render(w, r, http.StatusOK, "search", "Search tasks", data)
}

// apiSearch is the search as JSON.
func (d *server) apiSearch(w http.ResponseWriter, r *http.Request) {
	q, err := searchQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if q.Type == "" && q.Error == "" && q.IDPrefix == "" {
		d.fail(w, r, fmt.Errorf("%w: search with no filter: give a type, error text or ID prefix", errBadRequest))
		return
	}
	res, err := d.insp.ListTasks(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := map[string]any{"tasks": []taskView{}, "scanned": res.Scanned, "next": res.Next}
	tasks := make([]taskView, 0, len(res.Tasks))
	for _, ti := range res.Tasks {
		tasks = append(tasks, newTaskView(ti))
	}
	out["tasks"] = tasks
	writeJSON(w, http.StatusOK, out)
}
