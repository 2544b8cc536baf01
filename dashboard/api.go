package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// errBadRequest reports a request parameter out of range.
var errBadRequest = errors.New("dashboard: bad request")

// status maps an error to its HTTP status.
func status(err error) int {
	switch {
	case errors.Is(err, errReadOnly), errors.Is(err, errCSRF), errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errBadRequest), errors.Is(err, queue.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, queue.ErrQueueInUse), errors.Is(err, queue.ErrFinished):
		return http.StatusConflict
	case errors.Is(err, queue.ErrTaskState):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers with err: JSON for the API, an error page otherwise.
func (d *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code >= 500 {
		d.log.Error("dashboard request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if isAPI(r) {
		writeJSONError(w, code, err.Error())
		return
	}
	data := errorData{Status: code, StatusText: http.StatusText(code), Message: err.Error()}
	if q := r.PathValue("queue"); q != "" && errors.Is(err, queue.ErrNotFound) {
		// the queue or something in it: when the queue, say which queues
		// there are, instead of a page for a queue that is not
		if qs, _ := d.insp.Queues(r.Context()); !slices.Contains(qs, q) {
			data.NoQueue, data.Queues = q, qs
		}
	}
	if data.NoQueue != "" {
		if n := len(data.Queues) - d.opts.PageSize; n > 0 {
			// a page's worth: the overview pages through the rest
			data.Queues, data.More = data.Queues[:d.opts.PageSize], int64(n)
		}
	}
	d.render(w, r, code, "error", "Error", data)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// apiQueues serves a page of queues: at most limit (PageSize by
// default), by name, after a name, with a name prefix.
func (d *server) apiQueues(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	p, err := d.listQueues(r.Context(), q)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := make([]queueView, 0, len(p.Queues))
	for _, qi := range p.Queues {
		out = append(out, newQueueView(qi))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out, "next": p.Next, "matched": p.Matched})
}

func (d *server) apiQueue(w http.ResponseWriter, r *http.Request) {
	qi, err := d.insp.QueueInfo(r.Context(), r.PathValue("queue"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newQueueView(qi))
}

// apiHistory serves one queue's history, or every queue's without one.
func (d *server) apiHistory(w http.ResponseWriter, r *http.Request) {
	span, err := spanParam(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	var queues []string // every queue's, without one
	if q := r.PathValue("queue"); q != "" {
		queues = []string{q}
	}
	h, err := d.insp.History(r.Context(), span, queues...)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newHistoryView(h))
}

// spanParam reads a history's span: "hour" (the default) or "day".
func spanParam(r *http.Request) (time.Duration, error) {
	switch s := r.URL.Query().Get("span"); s {
	case "", "hour":
		return time.Hour, nil
	case "day":
		return 24 * time.Hour, nil
	default:
		return 0, fmt.Errorf("%w: span %q, want hour or day", errBadRequest, s)
	}
}

// spanName names a span as the span parameter does.
func spanName(span time.Duration) string {
	if span == 24*time.Hour {
		return "day"
	}
	return "hour"
}

// limitParam reads a page's limit: 1..inspect.MaxPageSize, def when unset.
func limitParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > inspect.MaxPageSize {
		return 0, fmt.Errorf("%w: limit %q, want 1..%d", errBadRequest, s, inspect.MaxPageSize)
	}
	return n, nil
}

// taskQuery reads a TaskQuery from the request: state, after, limit, order.
func (d *server) taskQuery(r *http.Request) (queue.TaskQuery, error) {
	v := r.URL.Query()
	q := queue.TaskQuery{Queue: r.PathValue("queue"), State: queue.State(v.Get("state")), After: v.Get("after")}
	if q.State == "" {
		q.State = queue.StatePending
	}
	if !validState(q.State) {
		return q, fmt.Errorf("%w: state %q, want one of %v", errBadRequest, q.State, tabs)
	}
	var err error
	if q.Limit, err = limitParam(v.Get("limit"), d.opts.PageSize); err != nil {
		return q, err
	}
	switch o := v.Get("order"); o {
	case "":
		q.Newest = newestFirst(q.State)
	case "newest":
		q.Newest = true
	case "oldest":
	default:
		return q, fmt.Errorf("%w: order %q, want oldest or newest", errBadRequest, o)
	}
	return q, nil
}

// stateRecent names the queue page's listing of the recent feed, which
// the Inspector lists for a TaskQuery without a State.
const stateRecent queue.State = "recent"

// inspectorQuery is q as the Inspector takes it: the recent feed is the
// query without a state.
func inspectorQuery(q queue.TaskQuery) queue.TaskQuery {
	if q.State == stateRecent {
		q.State = ""
	}
	return q
}

// tabs are the listings of a queue page, in order.
var tabs = []queue.State{queue.StatePending, queue.StateActive, queue.StateScheduled, queue.StateRetry,
	queue.StateDead, queue.StateSucceeded, stateRecent}

func validState(s queue.State) bool {
	for _, t := range tabs {
		if s == t {
			return true
		}
	}
	return false
}

// newestFirst is each listing's default order: finished and recent tasks
// newest first, the others in the order they will run.
func newestFirst(s queue.State) bool {
	return s == queue.StateDead || s == queue.StateSucceeded || s == stateRecent
}

func (d *server) apiTasks(w http.ResponseWriter, r *http.Request) {
	q, err := d.taskQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	iq := inspectorQuery(q)
	iq.Group = groupParam(r.URL.Query().Get("group"))
	page, err := d.insp.ListTasks(r.Context(), iq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := pageView{Tasks: make([]taskView, 0, len(page.Tasks)), Next: page.Next, Newer: page.Newer}
	for _, ti := range page.Tasks {
		out.Tasks = append(out.Tasks, newTaskView(ti))
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *server) apiTask(w http.ResponseWriter, r *http.Request) {
	ti, err := d.insp.GetTask(r.Context(), r.PathValue("queue"), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := struct {
		taskView
		CancelRequested bool `json:"cancel_requested,omitempty"`
	}{taskView: newTaskView(ti), CancelRequested: ti.State == queue.StateActive && ti.CancelRequested}
	writeJSON(w, http.StatusOK, v)
}

func (d *server) apiWorkers(w http.ResponseWriter, r *http.Request) {
	ws, err := d.insp.Workers(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := make([]workerView, 0, len(ws))
	for _, wi := range ws {
		out = append(out, newWorkerView(wi))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out})
}

func (d *server) apiSchedules(w http.ResponseWriter, r *http.Request) {
	s, err := d.schedules(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": append([]scheduleRow{}, s...)})
}

// apiLimits serves the limits of a page of queues: at most limit
// (PageSize by default) queues named after after.
func (d *server) apiLimits(w http.ResponseWriter, r *http.Request) {
	n, err := limitParam(r.URL.Query().Get("limit"), d.opts.PageSize)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	l, next, err := d.limits(r.Context(), r.URL.Query().Get("after"), n)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := append([]limitRow{}, l...)
	for j := range out {
		out[j].PerMS = out[j].Per.Milliseconds()
	}
	writeJSON(w, http.StatusOK, map[string]any{"limits": out, "next": next})
}

// apiCSRF hands out the CSRF token API clients put in X-CSRF-Token.
// Other origins cannot read it: the API sends no CORS headers.
func (d *server) apiCSRF(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"token": d.csrfToken(userOf(r)), "read_only": d.opts.ReadOnly})
}
