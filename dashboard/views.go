package dashboard

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// queueView is a queue as the API returns it.
type queueView struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Pending    int64  `json:"pending"`
	Active     int64  `json:"active"`
	Scheduled  int64  `json:"scheduled"`
	Retry      int64  `json:"retry"`
	Dead       int64  `json:"dead"`
	// Succeeded counts the succeeded tasks still kept (their Retention).
	Succeeded int64 `json:"succeeded"`
	// Waiting counts pending tasks parked for their group's limit (not
	// in Pending).
	Waiting   int64 `json:"waiting"`
	Paused    bool  `json:"paused"`
	LatencyMS int64 `json:"latency_ms"`
}

func newQueueView(qi *queue.QueueInfo) queueView {
	return queueView{Name: qi.Queue, Partitions: qi.Partitions, Pending: qi.Pending, Active: qi.Active,
		Scheduled: qi.Scheduled, Retry: qi.Retry, Dead: qi.Dead, Succeeded: qi.Succeeded, Waiting: qi.Waiting, Paused: qi.Paused,
		LatencyMS: qi.Latency.Milliseconds()}
}

// taskView is a task as the API returns it; the payload is decoded from
// msgpack into JSON.
type taskView struct {
	ID        string `json:"id"`
	Queue     string `json:"queue"`
	Partition int    `json:"partition"`
	Type      string `json:"type,omitempty"`
	State     string `json:"state,omitempty"`
	// Payload is the decoded payload; PayloadEncoding says how it was
	// stored: "msgpack", "json" or "text" (raw bytes that are JSON or
	// UTF-8 text), "base64" (other raw bytes, or msgpack that did not
	// decode: then PayloadError says why).
	Payload         any    `json:"payload"`
	PayloadEncoding string `json:"payload_encoding,omitempty"`
	PayloadError    string `json:"payload_error,omitempty"`
	Malformed       bool   `json:"malformed,omitempty"`
	// EncryptedWith names the key the payload is encrypted with; Redacted
	// says the dashboard's key ring could not decrypt some of the task's
	// values, which are then left out (payload_encoding "redacted").
	EncryptedWith string            `json:"encrypted_with,omitempty"`
	Redacted      bool              `json:"redacted,omitempty"`
	MaxRetry      int               `json:"max_retry"`
	Attempts      int               `json:"attempts"`
	TimeoutMS     int64             `json:"timeout_ms,omitempty"`
	RetentionMS   int64             `json:"retention_ms,omitempty"`
	UniqueBy      string            `json:"unique_by,omitempty"`
	Group         string            `json:"group,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	// Flow is the batch or workflow the task belongs to.
	Flow *flowView `json:"flow,omitempty"`
	// Progress is the handler's last report; Result what it wrote: text
	// when it is UTF-8, else ResultBase64.
	Progress *progressView `json:"progress,omitempty"`
	// Steps are the steps its handler finished (worker.Step).
	Steps         []stepView `json:"steps,omitempty"`
	Result        *string    `json:"result,omitempty"`
	ResultBase64  string     `json:"result_base64,omitempty"`
	Deadline      *jsonTime  `json:"deadline,omitempty"`
	EnqueuedAt    *jsonTime  `json:"enqueued_at,omitempty"`
	NextProcessAt *jsonTime  `json:"next_process_at,omitempty"`
	StartedAt     *jsonTime  `json:"started_at,omitempty"`
	FinishedAt    *jsonTime  `json:"finished_at,omitempty"`
	LastFailedAt  *jsonTime  `json:"last_failed_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	Worker        string     `json:"worker,omitempty"`
	Rank          int64      `json:"rank,omitempty"`
}

// jsonTime is a time in RFC 3339 with milliseconds, UTC.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`), nil
}

func optTime(t time.Time) *jsonTime {
	if t.IsZero() {
		return nil
	}
	jt := jsonTime(t)
	return &jt
}

func newTaskView(ti *queue.TaskInfo) taskView {
	v := taskView{
		ID: ti.ID, Queue: ti.Queue, Partition: ti.Partition, Type: ti.Type, State: string(ti.State),
		Malformed: ti.Malformed, MaxRetry: ti.MaxRetry, Attempts: ti.Attempts,
		TimeoutMS: ti.Timeout.Milliseconds(), RetentionMS: ti.Retention.Milliseconds(), UniqueBy: ti.UniqueBy, Group: ti.Group, Headers: ti.Headers,
		Deadline: optTime(ti.Deadline), EnqueuedAt: optTime(ti.EnqueuedAt), NextProcessAt: optTime(ti.NextProcessAt),
		StartedAt: optTime(ti.StartedAt), FinishedAt: optTime(ti.FinishedAt), LastFailedAt: optTime(ti.LastFailedAt),
		LastError: ti.LastError, Worker: ti.Worker, Rank: ti.Rank,
		EncryptedWith: ti.EncryptedWith, Redacted: ti.Redacted,
	}
	if ti.WorkflowID != "" {
		v.Flow = &flowView{WorkflowID: ti.WorkflowID, Node: ti.Node}
		if home.IsBatchNode(ti.Node) {
			v.Flow.BatchID = ti.WorkflowID // a batch is a workflow of its shape
		}
	}
	if p := ti.Progress; p != nil {
		v.Progress = &progressView{Percent: p.Percent, Message: p.Message, At: optTime(p.At)}
	}
	v.Steps = stepViews(ti)
	if ti.HasResult {
		if utf8.Valid(ti.Result) {
			r := string(ti.Result)
			v.Result = &r
		} else {
			v.ResultBase64 = base64.StdEncoding.EncodeToString(ti.Result)
		}
	}
	if ti.Type != "" || len(ti.Payload) > 0 {
		v.Payload, v.PayloadEncoding, v.PayloadError = payloadJSON(ti)
	}
	if ti.Redacted && ti.HasResult && ti.Result == nil {
		v.Result = nil
	}
	return v
}

// payloadJSON decodes a task's payload into a value encoding/json can write.
func payloadJSON(ti *queue.TaskInfo) (value any, encoding, errText string) {
	if redacted(ti) {
		return nil, "redacted", ""
	}
	if ti.Raw || ti.Malformed {
		switch {
		case len(ti.Payload) > 0 && json.Valid(ti.Payload):
			return json.RawMessage(ti.Payload), "json", ""
		case utf8.Valid(ti.Payload):
			return string(ti.Payload), "text", ""
		}
		return base64.StdEncoding.EncodeToString(ti.Payload), "base64", ""
	}
	var v any
	if err := ti.Decode(&v); err != nil {
		return base64.StdEncoding.EncodeToString(ti.Payload), "base64", err.Error()
	}
	v, err := jsonable(v)
	if err != nil {
		return base64.StdEncoding.EncodeToString(ti.Payload), "base64", err.Error()
	}
	return v, "msgpack", ""
}

// redacted reports a payload encrypted with a key the dashboard's key
// ring lacks.
func redacted(ti *queue.TaskInfo) bool {
	return ti.Redacted && ti.EncryptedWith != "" && ti.Payload == nil
}

// stepView is a finished step: its value decoded from msgpack, or, when
// it does not decode, its bytes in base64 and why.
type stepView struct {
	Name        string    `json:"name"`
	FinishedAt  *jsonTime `json:"finished_at,omitempty"`
	Value       any       `json:"value"`
	ValueBase64 string    `json:"value_base64,omitempty"`
	ValueError  string    `json:"value_error,omitempty"`
}

// stepViews returns the task's finished steps as views.
func stepViews(ti *queue.TaskInfo) []stepView {
	var out []stepView
	for _, st := range ti.Steps {
		sv := stepView{Name: st.Name, FinishedAt: optTime(st.FinishedAt)}
		if st.Value == nil && ti.Redacted {
			sv.Value = "redacted"
			out = append(out, sv)
			continue
		}
		var v any
		err := st.Decode(&v) // bounded by the bytes present, as every decode of a value
		if err == nil {
			v, err = jsonable(v)
		}
		if err != nil {
			sv.ValueBase64, sv.ValueError = base64.StdEncoding.EncodeToString(st.Value), err.Error()
		} else {
			sv.Value = v
		}
		out = append(out, sv)
	}
	return out
}

// jsonable turns what msgpack decodes into (maps with any keys, byte
// slices, times) into values encoding/json writes faithfully.
func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = j
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case []byte:
		if utf8.Valid(x) {
			return string(x), nil
		}
		return base64.StdEncoding.EncodeToString(x), nil
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case nil, bool, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return x, nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	}
	return fmt.Sprintf("%v", v), nil
}

// jsonFloat keeps what JSON cannot hold (NaN, infinities) as text.
func jsonFloat(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f), nil
	}
	return f, nil
}

// pageView is a page of tasks as the API returns it.
type pageView struct {
	Tasks []taskView `json:"tasks"`
	// Next is the marker of the next page; Newer, on a first newest-first
	// page, is where a live tail starts (read oldest first after it).
	Next  string `json:"next"`
	Newer string `json:"newer,omitempty"`
}

// historyView is a queue's history as the API returns it.
type historyView struct {
	Queue       string      `json:"queue,omitempty"`
	Span        string      `json:"span"`
	StepSeconds int64       `json:"step_seconds"`
	Points      []pointView `json:"points"`
}

type pointView struct {
	Start     jsonTime `json:"start"`
	Processed int64    `json:"processed"`
	Succeeded int64    `json:"succeeded"`
	Failed    int64    `json:"failed"`
}

func newHistoryView(h *queue.History) historyView {
	v := historyView{Queue: h.Queue, Span: spanName(h.Span), StepSeconds: int64(h.Step / time.Second)}
	for _, p := range h.Points {
		v.Points = append(v.Points, pointView{Start: jsonTime(p.Start), Processed: p.Succeeded + p.Failed, Succeeded: p.Succeeded, Failed: p.Failed})
	}
	return v
}

// workerView is a worker process as the API returns it.
type workerView struct {
	ID            string                     `json:"id"`
	LastHeartbeat *jsonTime                  `json:"last_heartbeat,omitempty"`
	Host          string                     `json:"host,omitempty"`
	PID           int                        `json:"pid,omitempty"`
	Started       *jsonTime                  `json:"started,omitempty"`
	Queues        map[string]int             `json:"queues,omitempty"` // queue -> weight
	Strict        bool                       `json:"strict_priority,omitempty"`
	Concurrency   int                        `json:"concurrency,omitempty"`
	Busy          int                        `json:"busy"`
	Ahead         int                        `json:"ahead"` // leased ahead of the free slots, waiting in the worker
	Work          map[string]workerQueueView `json:"work,omitempty"`
	Tasks         []taskView                 `json:"tasks"`
}

type workerQueueView struct {
	Running         int     `json:"running"`
	Ahead           int     `json:"ahead"`
	Finished        int64   `json:"finished"` // handlers finished since the worker started
	MeanHandlerSecs float64 `json:"mean_handler_seconds"`
}

func newWorkerView(w *queue.WorkerInfo) workerView {
	v := workerView{ID: w.ID, LastHeartbeat: optTime(w.LastHeartbeat), Tasks: []taskView{},
		Host: w.Host, PID: w.PID, Started: optTime(w.Started), Queues: w.Queues, Strict: w.Strict,
		Concurrency: w.Concurrency, Busy: w.Busy, Ahead: w.Ahead}
	if len(w.Work) > 0 {
		v.Work = make(map[string]workerQueueView, len(w.Work))
		for q, wq := range w.Work {
			v.Work[q] = workerQueueView{Running: wq.Running, Ahead: wq.Ahead, Finished: wq.Finished, MeanHandlerSecs: wq.MeanHandlerTime.Seconds()}
		}
	}
	for _, t := range w.Tasks {
		v.Tasks = append(v.Tasks, newTaskView(t))
	}
	return v
}

type progressView struct {
	Percent int       `json:"percent"`
	Message string    `json:"message,omitempty"`
	At      *jsonTime `json:"at,omitempty"`
}

// flowView names the batch, or the workflow and node, a task belongs to.
type flowView struct {
	BatchID    string `json:"batch_id,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	Node       string `json:"node,omitempty"`
}

// groupView is a group as the API returns it.
type groupView struct {
	Group   string `json:"group"`
	Waiting int64  `json:"waiting"`
	Running int64  `json:"running"` // handlers running
	Ahead   int64  `json:"ahead"`   // leased ahead, held by a worker
	Weight  int    `json:"weight"`
	Paused  bool   `json:"paused"`
}

// newGroupView splits g's leased tasks by what the queue's live workers
// report (work).
func newGroupView(g queue.GroupInfo, work inspect.QueueWork) groupView {
	running, ahead := work.SplitGroup(g.Group, g.Running)
	return groupView{Group: g.Group, Waiting: g.Waiting, Running: running, Ahead: ahead, Weight: g.Weight, Paused: g.Paused}
}

// groupPageView is a page of groups as the API returns it.
type groupPageView struct {
	Groups []groupView `json:"groups"`
	// Next is the marker of the next page; "" on the last.
	Next string `json:"next"`
}
