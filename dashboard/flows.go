package dashboard

import (
	"errors"
	"github.com/shardq/shardq/internal/inspect"
	"net/http"
	"strconv"
	"time"

	"github.com/shardq/shardq/queue"
)

// maxFlows bounds the flows page and /api/flows: one read per flow home
// for the list, then one per flow shown. A workflow's read grows with its
// nodes.
const maxFlows = 100

// flowRow is one batch or workflow on the flows page and in
// /api/flows.
type flowRow struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	// Batch or Workflow is its progress (nil when it expired
	// meanwhile).
	Batch    *batchView       `json:"batch,omitempty"`
	Workflow *workflowSummary `json:"workflow,omitempty"`
}

// batchView is a batch as the API returns it.
type batchView struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Parent      string `json:"parent,omitempty"`
	Total       int    `json:"total"`
	Pending     int    `json:"pending"`
	Succeeded   int    `json:"succeeded"`
	Dead        int    `json:"dead"`
	Closed      bool   `json:"closed"`
	Finished    bool   `json:"finished"`
	// Percent is the share of members finished, succeeded or dead.
	Percent         int        `json:"percent"`
	OnSuccess       string     `json:"on_success,omitempty"`
	OnComplete      string     `json:"on_complete,omitempty"`
	SuccessFiredAt  *time.Time `json:"success_fired_at,omitempty"`
	CompleteFiredAt *time.Time `json:"complete_fired_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
}

func newBatchView(b *queue.BatchInfo) *batchView {
	v := &batchView{ID: b.ID, Description: b.Description, Parent: b.Parent, Total: b.Total, Pending: b.Pending,
		Succeeded: b.Succeeded, Dead: b.Dead, Closed: b.Closed, Finished: b.Finished, OnSuccess: b.OnSuccess,
		OnComplete: b.OnComplete, SuccessFiredAt: timePtr(b.SuccessFiredAt), CompleteFiredAt: timePtr(b.CompleteFiredAt),
		CreatedAt: b.CreatedAt, FinishedAt: timePtr(b.FinishedAt)}
	if b.Total > 0 {
		v.Percent = (b.Succeeded + b.Dead) * 100 / b.Total
	}
	return v
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// flowRows reads the newest flows and each one's progress.
func (d *Dashboard) flowRows(r *http.Request) ([]flowRow, error) {
	limit := d.opts.PageSize
	if n, err := strconv.Atoi(r.FormValue("limit")); err == nil && n > 0 {
		limit = min(n, maxFlows)
	}
	recent, err := inspect.RecentFlows(r.Context(), d.insp, limit)
	if err != nil {
		return nil, err
	}
	rows := make([]flowRow, 0, len(recent))
	for _, f := range recent {
		row := flowRow{Kind: f.Kind, ID: f.ID, CreatedAt: f.CreatedAt}
		if err := d.flowProgress(r, &row); err != nil && !errorsIsNotFound(err) {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// flowProgress reads row's flow into its Batch or Workflow.
func (d *Dashboard) flowProgress(r *http.Request, row *flowRow) error {
	switch row.Kind {
	case "workflow":
		w, err := d.insp.WorkflowSummary(r.Context(), row.ID)
		if err != nil {
			return err
		}
		row.Workflow = newWorkflowSummary(w)
	default:
		b, err := d.insp.GetBatch(r.Context(), row.ID)
		if err != nil {
			return err
		}
		row.Batch = newBatchView(b)
	}
	return nil
}

func (d *Dashboard) flowsPage(w http.ResponseWriter, r *http.Request) {
	rows, err := d.flowRows(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "flows", "Flows", rows)
}

func (d *Dashboard) apiFlows(w http.ResponseWriter, r *http.Request) {
	rows, err := d.flowRows(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flows": rows})
}

func (d *Dashboard) batchPage(w http.ResponseWriter, r *http.Request) {
	b, err := d.insp.GetBatch(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "batch", "Batch "+b.ID, newBatchView(b))
}

func (d *Dashboard) apiBatch(w http.ResponseWriter, r *http.Request) {
	b, err := d.insp.GetBatch(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newBatchView(b))
}

// errorsIsNotFound: a flow listed as recent whose record expired since
// (its retention ended) is shown without progress, not an error.
func errorsIsNotFound(err error) bool {
	return errors.Is(err, queue.ErrNotFound)
}
