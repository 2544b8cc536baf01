package dashboard

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// templateSet is one page: the layout with the page's "content".
type templateSet = template.Template

// pageNames are the templates under templates/, each rendered in layout.html.
var pageNames = []string{"overview", "queue", "task", "workers", "schedules", "limits", "find", "search", "flows", "batch", "workflow", "node", "error"}

func mustParsePages() map[string]*templateSet {
	out := map[string]*templateSet{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(files, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// page is what every template gets: the layout's needs and the page's Data.
type page struct {
	App      string
	Title    string
	Base     string
	CSRF     string
	ReadOnly bool
	Nav      string
	Flash    string
	// Return is this page's path and query, relative to Base: where its
	// forms come back to.
	Return string
	Data   any
}

type errorData struct {
	Status     int
	StatusText string
	Message    string
	// NoQueue is the queue asked for that does not exist, and Queues
	// the ones that do.
	NoQueue string
	Queues  []string
	More    int64 // queues there are beyond Queues
}

// render executes a page into a buffer first, so a template error is a
// clean 500 rather than half a page.
func (d *server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	p := page{App: d.opts.Title, Title: title, Base: d.base(r), CSRF: d.csrfToken(userOf(r)),
		ReadOnly: d.opts.ReadOnly, Nav: name, Flash: flash(r), Return: r.URL.RequestURI(), Data: data}
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		d.log.Error("dashboard: render page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

type overviewData struct {
	Queues  []*queue.QueueInfo
	Total   queue.QueueInfo
	Chart   chart
	Alarms  []alarm
	Refresh int64 // ms between refreshes of the page's live parts
	// The page of queues: those whose names start with Prefix, after
	// After. Whole is set when the page holds every queue: the chart,
	// totals and alarms then cover them all, else the page's queues.
	Prefix, After     string
	From, To, Matched int64
	Whole             bool
	FirstURL, NextURL string
}

// overviewPage lists a page of queues (PageSize by default) with their
// counts, the chart and the alarms of those queues: its Redis commands
// and its size are bounded by the page, whatever the number of queues.
func (d *server) overviewPage(w http.ResponseWriter, r *http.Request) {
	span, err := spanParam(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q, err := d.queueQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q.span = span
	p, err := d.listQueues(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	alarms, err := d.alarms(r.Context(), p.Queues)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := overviewData{Queues: p.Queues, Chart: newChart(p.History), Alarms: alarms, Refresh: d.opts.RefreshInterval.Milliseconds(),
		Prefix: q.prefix, After: q.after, From: int64(p.Offset + 1), To: int64(p.Offset + len(p.Queues)), Matched: int64(p.Matched),
		Whole: q.prefix == "" && p.Offset == 0 && p.Next == ""}
	link := func(after string) string {
		v := url.Values{}
		for k, s := range map[string]string{"prefix": q.prefix, "after": after, "limit": r.URL.Query().Get("limit"), "span": r.URL.Query().Get("span")} {
			if s != "" {
				v.Set(k, s)
			}
		}
		return "?" + v.Encode()
	}
	data.FirstURL = link("")
	if p.Next != "" {
		data.NextURL = link(p.Next)
	}
	for _, qi := range p.Queues {
		t := &data.Total
		t.Pending += qi.Pending
		t.Active += qi.Active
		t.Scheduled += qi.Scheduled
		t.Retry += qi.Retry
		t.Dead += qi.Dead
		t.Succeeded += qi.Succeeded
		t.SucceededTotal += qi.SucceededTotal
		t.Latency = max(t.Latency, qi.Latency)
	}
	d.render(w, r, http.StatusOK, "overview", "Queues", data)
}

type queueData struct {
	Info    *queue.QueueInfo
	Scaling *queue.Scaling
	Chart   chart
	State   queue.State
	Tabs    []tab
	Rows    []taskRow
	After   string
	Next    string
	HasNext bool
	// Tail is set on the first page of the recent feed: the live tail
	// reads oldest first after Newer, every TailMS.
	Tail    bool
	Newer   string
	TailMS  int64
	Limit   int
	Refresh int64 // ms between refreshes of the page's live parts
	// Groups is set on the Groups tab, which lists groups instead of
	// tasks.
	Groups *groupList
	// Work is what the live workers serving the queue published at their
	// last heartbeats: handlers running, and tasks leased ahead of their
	// free slots (prefetched). Both are active in Redis; only the workers
	// know which run, and they publish it per queue, not per group.
	Work inspect.QueueWork
	// Group filters the listing by group, a bounded read of Scanned
	// tasks (groupfilter.go).
	Group   string
	Scanned int
	Scan    int
}

type tab struct {
	State  queue.State
	Count  int64
	Active bool
}

func (d *server) queuePage(w http.ResponseWriter, r *http.Request) {
	q, err := d.taskQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, err := d.queueHead(r, q.Queue, q.State)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.After, data.Limit = q.After, q.Limit
	var tasks []*queue.TaskInfo
	if data.Group = groupParam(r.URL.Query().Get("group")); data.Group != "" {
		gq := inspectorQuery(q)
		gq.Group = data.Group
		p, err := d.insp.ListTasks(r.Context(), gq)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		// a filter reads as a search does: Next is "" at the listing's end
		tasks, data.Next, data.HasNext, data.Scanned = p.Tasks, p.Next, p.Next != "", p.Scanned
	} else {
		p, err := d.insp.ListTasks(r.Context(), inspectorQuery(q))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		tasks, data.Next, data.HasNext = p.Tasks, p.Next, len(p.Tasks) == q.Limit
		// the live tail shows every task: not under a group filter
		if q.State == stateRecent && q.After == "" && q.Newest {
			data.Tail, data.Newer = true, p.Newer
		}
	}
	for _, ti := range tasks {
		data.Rows = append(data.Rows, taskRow{TaskInfo: ti, Preview: preview(ti, 120)})
	}
	d.render(w, r, http.StatusOK, "queue", q.Queue, data)
}

// queueHead reads what every tab of a queue page shows above its
// listing: the counts, the chart, the autoscaling figure and the tabs,
// state's marked current.
func (d *server) queueHead(r *http.Request, name string, state queue.State) (*queueData, error) {
	span, err := spanParam(r)
	if err != nil {
		return nil, err
	}
	info, err := d.insp.QueueInfo(r.Context(), name)
	if err != nil {
		return nil, err
	}
	h, err := d.insp.History(r.Context(), span, name)
	if err != nil {
		return nil, err
	}
	sc, err := d.insp.Scaling(r.Context(), queue.ScalingQuery{Queue: name})
	if err != nil {
		return nil, err
	}
	live, err := inspect.LiveWork(r.Context(), d.insp)
	if err != nil {
		return nil, err
	}
	data := &queueData{Info: info, Scaling: sc, Chart: newChart(h), State: state, Work: live[name], Scan: groupScan,
		TailMS: d.opts.TailInterval.Milliseconds(), Refresh: d.opts.RefreshInterval.Milliseconds()}
	counts := map[queue.State]int64{queue.StatePending: info.Pending, queue.StateActive: info.Active,
		queue.StateScheduled: info.Scheduled, queue.StateRetry: info.Retry, queue.StateDead: info.Dead, queue.StateSucceeded: info.Succeeded}
	for _, s := range tabs {
		c, ok := counts[s]
		if !ok {
			c = -1 // the recent feed: no count
		}
		data.Tabs = append(data.Tabs, tab{State: s, Count: c, Active: s == state})
	}
	return data, nil
}

// taskRow is a task as a list shows it.
type taskRow struct {
	*queue.TaskInfo
	Preview string
}

// preview is the payload as compact JSON, cut to n runes.
func preview(ti *queue.TaskInfo, n int) string {
	if ti.Type == "" && len(ti.Payload) == 0 {
		return ""
	}
	if redacted(ti) {
		return "redacted: encrypted with key " + ti.EncryptedWith
	}
	v, _, _ := payloadJSON(ti)
	s := []rune(compactJSON(v))
	if len(s) > n {
		return string(s[:n-1]) + "…"
	}
	return string(s)
}

type taskData struct {
	Task            *queue.TaskInfo
	Payload         string
	PayloadEncoding string
	PayloadError    string
	CancelRequested bool
	// Result is the task's result as text, base64 when ResultBinary.
	Result       string
	ResultBinary bool
	// Steps are the steps its handler finished, each value as JSON.
	Steps []stepRow
}

// stepRow is a finished step as the task page shows it.
type stepRow struct {
	Name       string
	FinishedAt time.Time
	Value      string // indented JSON, or base64 with Error set
	Error      string
}

func (d *server) taskPage(w http.ResponseWriter, r *http.Request) {
	ti, err := d.insp.GetTask(r.Context(), r.PathValue("queue"), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := taskData{Task: ti}
	if ti.HasResult {
		if utf8.Valid(ti.Result) {
			data.Result = string(ti.Result)
		} else {
			data.Result, data.ResultBinary = base64.StdEncoding.EncodeToString(ti.Result), true
		}
	}
	v, enc, perr := payloadJSON(ti)
	data.Payload, data.PayloadEncoding, data.PayloadError = prettyJSON(v), enc, perr
	data.CancelRequested = ti.State == queue.StateActive && ti.CancelRequested
	for i, sv := range stepViews(ti) {
		row := stepRow{Name: sv.Name, FinishedAt: ti.Steps[i].FinishedAt, Value: prettyJSON(sv.Value), Error: sv.ValueError}
		if sv.ValueError != "" {
			row.Value = sv.ValueBase64
		}
		data.Steps = append(data.Steps, row)
	}
	d.render(w, r, http.StatusOK, "task", "Task "+ti.ID, data)
}

func (d *server) workersPage(w http.ResponseWriter, r *http.Request) {
	ws, err := d.insp.Workers(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "workers", "Workers", ws)
}

func (d *server) schedulesPage(w http.ResponseWriter, r *http.Request) {
	s, err := d.schedules(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "schedules", "Cron schedules", s)
}

// limitsData is a page of the limits page: the limits of the queues
// named after After, up to Next when more follow.
type limitsData struct {
	Rows        []limitRow
	After, Next string
}

func (d *server) limitsPage(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	rows, next, err := d.limits(r.Context(), after, d.opts.PageSize)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "limits", "Limits", limitsData{Rows: rows, After: after, Next: next})
}

type findData struct {
	Queues   []string
	Queue    string
	ID       string
	NotFound bool
}

// findPage looks a task up by queue and ID and redirects to its page.
func (d *server) findPage(w http.ResponseWriter, r *http.Request) {
	data := findData{Queue: strings.TrimSpace(r.FormValue("queue")), ID: strings.TrimSpace(r.FormValue("id"))}
	code := http.StatusOK
	if data.Queue != "" && data.ID != "" {
		_, err := d.insp.GetTask(r.Context(), data.Queue, data.ID)
		switch {
		case err == nil:
			http.Redirect(w, r, d.base(r)+"/queues/"+url.PathEscape(data.Queue)+"/tasks/"+url.PathEscape(data.ID), http.StatusSeeOther)
			return
		case errors.Is(err, queue.ErrNotFound):
			data.NotFound, code = true, http.StatusNotFound
		default:
			d.fail(w, r, err)
			return
		}
	}
	data.Queues, _ = d.insp.Queues(r.Context())
	data.Queues = data.Queues[:min(len(data.Queues), d.opts.PageSize)] // suggestions, bounded as every list is
	d.render(w, r, code, "find", "Find a task", data)
}

// prettyJSON writes v indented, with <, > and & as they are: the
// template escapes what it shows.
func prettyJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err.Error()
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
