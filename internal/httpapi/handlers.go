package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/shardq/shardq/queue"
)

// enqueue is POST /v1/queues/{queue}/tasks: one task, one round trip.
// An Idempotency-Key header is the task's ID; a task ID another task
// holds answers that task, with duplicate set, and 200 rather than 201.
func (a *api) enqueue(w http.ResponseWriter, r *http.Request) {
	var req taskRequest
	if err := decodeBody(r.Body, &req); err != nil {
		a.refuse(w, r, err)
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if req.TaskID != "" && req.TaskID != key {
			a.refuse(w, r, fmt.Errorf("%w: Idempotency-Key %q and task_id %q differ", errBody, key, req.TaskID))
			return
		}
		req.TaskID = key
	}
	task, err := req.task(r.PathValue("queue"))
	if err != nil {
		a.refuse(w, r, err)
		return
	}
	info, err := a.client.Enqueue(r.Context(), task)
	switch {
	case err == nil:
		writeJSON(w, http.StatusCreated, infoOf(info))
	case errors.Is(err, queue.ErrNotReplicated) && info != nil:
		out := infoOf(info)
		out.NotReplicated = true
		writeJSON(w, http.StatusCreated, out)
	case errors.Is(err, queue.ErrDuplicateTaskID) && info != nil:
		out := infoOf(info)
		out.Duplicate = true
		writeJSON(w, http.StatusOK, out)
	default:
		a.refuse(w, r, err)
	}
}

// batchItem is one task's answer in a batch: its info, or its error.
type batchItem struct {
	Task  *taskInfo `json:"task,omitempty"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// enqueueBatch is POST /v1/queues/{queue}/tasks/batch: up to MaxBatch
// tasks in one round trip (EnqueueMany). It answers 200 with one item per
// task, in order: the tasks refused are reported in their items and the
// others enqueued. A body that does not decode, or a batch too large,
// enqueues nothing.
func (a *api) enqueueBatch(w http.ResponseWriter, r *http.Request) {
	var req batchRequest
	if err := decodeBody(r.Body, &req); err != nil {
		a.refuse(w, r, err)
		return
	}
	switch n := len(req.Tasks); {
	case n == 0:
		a.refuse(w, r, fmt.Errorf("%w: the batch has no task", errBody))
		return
	case n > a.opts.MaxBatch:
		a.refuse(w, r, fmt.Errorf("%w: the batch has %d tasks, at most %d", errBody, n, a.opts.MaxBatch))
		return
	}
	q := r.PathValue("queue")
	items := make([]batchItem, len(req.Tasks))
	tasks := make([]*queue.Task, 0, len(req.Tasks))
	sent := make([]int, 0, len(req.Tasks)) // the item of each task sent
	for i := range req.Tasks {
		t, err := req.Tasks[i].task(q)
		if err != nil {
			items[i].setError(err)
			continue
		}
		tasks = append(tasks, t)
		sent = append(sent, i)
	}
	if len(tasks) > 0 {
		infos, err := a.client.EnqueueMany(r.Context(), tasks)
		var each *queue.EnqueueError
		if err != nil && !errors.As(err, &each) {
			a.refuse(w, r, err)
			return
		}
		for j, i := range sent {
			var terr error
			if each != nil {
				terr = each.Errs[j]
			}
			switch {
			case terr == nil, errors.Is(terr, queue.ErrNotReplicated):
				items[i].Task = infoOf(infos[j])
				items[i].Task.NotReplicated = terr != nil
			case errors.Is(terr, queue.ErrDuplicateTaskID) && infos[j] != nil:
				items[i].Task = infoOf(infos[j])
				items[i].Task.Duplicate = true
			default:
				items[i].setError(terr)
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": items})
}

// setError records err as the item's answer.
func (b *batchItem) setError(err error) {
	b.Error = &struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{codeOf(statusOf(err)), err.Error()}
}

// getTask is GET /v1/queues/{queue}/tasks/{id}: the task's info, with its
// result while it is kept.
func (a *api) getTask(w http.ResponseWriter, r *http.Request) {
	info, err := a.insp.GetTask(r.Context(), r.PathValue("queue"), r.PathValue("id"))
	if err != nil {
		a.refuse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, infoOf(info))
}

// refuse answers err with its status, and logs what is not the caller's
// mistake.
func (a *api) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status >= 500 {
		a.opts.Logger.Warn("http api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, status, err.Error())
}
