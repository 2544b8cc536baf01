package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// maxFlows bounds the workflows page and /api/workflows: one read per workflow home
// for the list, then one per flow shown. A workflow's read grows with its
// nodes.
const maxFlows = 100

// flowRow is one batch or workflow on the flows page and in
// /api/workflows.
type flowRow struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	// Batch or Workflow is its progress (nil when it expired
	// meanwhile).
	Batch    *batchView       `json:"batch,omitempty"`
	Workflow *workflowSummary `json:"workflow,omitempty"`
}

// batchView is a batch as the API returns it: its members' counts, and
// its gate and callbacks, read from its workflow's summary.
type batchView struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Parent      string `json:"parent,omitempty"`
	Total       int    `json:"total"`
	Pending     int    `json:"pending"`
	Succeeded   int    `json:"succeeded"`
	Dead        int    `json:"dead"`
	Closed      bool   `json:"closed"`
	// Finished: closed and no member pending; the callbacks went out.
	Finished bool `json:"finished"`
	// Percent is the share of members finished, succeeded or dead.
	Percent int `json:"percent"`
	// State is the batch's workflow's: active until its callbacks
	// finished too.
	State         string     `json:"state"`
	OnSuccess     string     `json:"on_success,omitempty"`
	OnComplete    string     `json:"on_complete,omitempty"`
	SuccessState  string     `json:"success_state,omitempty"`
	CompleteState string     `json:"complete_state,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	FinishedAt    *time.Time `json:"finished_at,omitempty"`
}

// newBatchView reads w, a batch's workflow summary: its members are
// every node but the gate and the callbacks. A workflow of another shape,
// without a gate, is ErrNotFound: no batch has its ID.
func newBatchView(w *queue.WorkflowInfo) (*batchView, error) {
	if w.Node(home.Gate) == nil {
		return nil, fmt.Errorf("batch %s: %w (a workflow)", w.ID, queue.ErrNotFound)
	}
	v := &batchView{ID: w.ID, Description: w.Description, Parent: w.Parent, State: string(w.State),
		CreatedAt: w.CreatedAt, FinishedAt: timePtr(w.FinishedAt)}
	own := map[queue.State]int{}
	for _, n := range w.Nodes {
		own[n.State]++
		switch n.Name {
		case home.Gate:
			v.Closed = n.State == queue.StateSucceeded
		case home.OnSuccess:
			v.OnSuccess, v.SuccessState = n.TaskID, string(n.State)
		case home.OnComplete:
			v.OnComplete, v.CompleteState = n.TaskID, string(n.State)
		}
	}
	v.Total = w.Total - len(w.Nodes)
	v.Succeeded = w.Counts[queue.StateSucceeded] - own[queue.StateSucceeded]
	v.Dead = w.Counts[queue.StateDead] - own[queue.StateDead]
	v.Pending = v.Total - v.Succeeded - v.Dead
	v.Finished = v.Closed && v.Pending == 0
	if v.Total > 0 {
		v.Percent = (v.Succeeded + v.Dead) * 100 / v.Total
	}
	return v, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// flowRows reads the newest flows and each one's progress.
func (d *server) flowRows(r *http.Request) ([]flowRow, error) {
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
func (d *server) flowProgress(r *http.Request, row *flowRow) error {
	w, err := d.insp.WorkflowSummary(r.Context(), row.ID)
	if err != nil {
		return err
	}
	if row.Kind == "workflow" {
		row.Workflow = newWorkflowSummary(w)
		return nil
	}
	row.Batch, err = newBatchView(w)
	return err
}

func (d *server) flowsPage(w http.ResponseWriter, r *http.Request) {
	rows, err := d.flowRows(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "flows", "Workflows", rows)
}

func (d *server) apiFlows(w http.ResponseWriter, r *http.Request) {
	rows, err := d.flowRows(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflows": rows})
}

// batch reads the batch of the request's ID.
func (d *server) batch(r *http.Request) (*batchView, error) {
	w, err := d.insp.WorkflowSummary(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return newBatchView(w)
}

func (d *server) batchPage(w http.ResponseWriter, r *http.Request) {
	b, err := d.batch(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "batch", "Batch "+b.ID, b)
}

func (d *server) apiBatch(w http.ResponseWriter, r *http.Request) {
	b, err := d.batch(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// errorsIsNotFound: a flow listed as recent whose record expired since
// (its retention ended) is shown without progress, not an error.
func errorsIsNotFound(err error) bool {
	return errors.Is(err, queue.ErrNotFound)
}
