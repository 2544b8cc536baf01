package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// The JSON of --output json. Field names are the dashboard API's
// (dashboard/API.md), so a script reads either the same way.

// taskJSON is a task.
type taskJSON struct {
	ID        string `json:"id"`
	Queue     string `json:"queue"`
	Partition int    `json:"partition"`
	Type      string `json:"type,omitempty"`
	State     string `json:"state,omitempty"`
	// Payload is the payload as JSON, when describe reads it:
	// PayloadEncoding says how it was stored, "json", "text", "msgpack"
	// or "base64" (other bytes), or "redacted" (encrypted with a key the
	// key ring lacks).
	Payload         any               `json:"payload,omitempty"`
	PayloadEncoding string            `json:"payload_encoding,omitempty"`
	Malformed       bool              `json:"malformed,omitempty"`
	EncryptedWith   string            `json:"encrypted_with,omitempty"`
	Redacted        bool              `json:"redacted,omitempty"`
	MaxRetry        int               `json:"max_retry"`
	Attempts        int               `json:"attempts"`
	TimeoutMS       int64             `json:"timeout_ms,omitempty"`
	RetentionMS     int64             `json:"retention_ms,omitempty"`
	UniqueBy        string            `json:"unique_by,omitempty"`
	Group           string            `json:"group,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	WorkflowID      string            `json:"workflow_id,omitempty"`
	Node            string            `json:"node,omitempty"`
	Result          *string           `json:"result,omitempty"`
	ResultBase64    string            `json:"result_base64,omitempty"`
	CancelRequested bool              `json:"cancel_requested,omitempty"`
	Deadline        time.Time         `json:"deadline,omitzero"`
	EnqueuedAt      time.Time         `json:"enqueued_at,omitzero"`
	NextProcessAt   time.Time         `json:"next_process_at,omitzero"`
	StartedAt       time.Time         `json:"started_at,omitzero"`
	FinishedAt      time.Time         `json:"finished_at,omitzero"`
	LastFailedAt    time.Time         `json:"last_failed_at,omitzero"`
	LastError       string            `json:"last_error,omitempty"`
	Worker          string            `json:"worker,omitempty"`
}

// newTaskJSON is ti as JSON; with full, its payload and result too.
func newTaskJSON(ti *queue.TaskInfo, full bool) taskJSON {
	v := taskJSON{ID: ti.ID, Queue: ti.Queue, Partition: ti.Partition, Type: ti.Type, State: string(ti.State),
		Malformed: ti.Malformed, EncryptedWith: ti.EncryptedWith, Redacted: ti.Redacted, MaxRetry: ti.MaxRetry,
		Attempts: ti.Attempts, TimeoutMS: ti.Timeout.Milliseconds(), RetentionMS: ti.Retention.Milliseconds(),
		UniqueBy: ti.UniqueBy, Group: ti.Group, Headers: ti.Headers, WorkflowID: ti.WorkflowID, Node: ti.Node,
		CancelRequested: ti.State == queue.StateActive && ti.CancelRequested,
		Deadline:        ti.Deadline, EnqueuedAt: ti.EnqueuedAt, NextProcessAt: ti.NextProcessAt, StartedAt: ti.StartedAt,
		FinishedAt: ti.FinishedAt, LastFailedAt: ti.LastFailedAt, LastError: ti.LastError, Worker: ti.Worker}
	if !full {
		return v
	}
	v.Payload, v.PayloadEncoding = payloadOf(ti)
	if ti.HasResult && ti.Result != nil {
		if utf8.Valid(ti.Result) {
			r := string(ti.Result)
			v.Result = &r
		} else {
			v.ResultBase64 = base64.StdEncoding.EncodeToString(ti.Result)
		}
	}
	return v
}

// payloadOf is a task's payload as a JSON value, and how it was stored.
func payloadOf(ti *queue.TaskInfo) (any, string) {
	switch {
	case ti.Redacted && ti.EncryptedWith != "" && ti.Payload == nil:
		return nil, "redacted"
	case len(ti.Payload) == 0:
		return nil, ""
	case ti.Raw || ti.Malformed:
		if json.Valid(ti.Payload) {
			return json.RawMessage(ti.Payload), "json"
		}
		if utf8.Valid(ti.Payload) {
			return string(ti.Payload), "text"
		}
	default:
		if b, err := msgpackToJSON(ti.Payload); err == nil {
			return json.RawMessage(b), "msgpack"
		}
	}
	return base64.StdEncoding.EncodeToString(ti.Payload), "base64"
}

// queueJSON is a queue's counts, as stats prints them and the dashboard's
// /api/queues.
type queueJSON struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Pending    int64  `json:"pending"`
	Active     int64  `json:"active"`
	Scheduled  int64  `json:"scheduled"`
	Retry      int64  `json:"retry"`
	Dead       int64  `json:"dead"`
	Succeeded  int64  `json:"succeeded"`
	Waiting    int64  `json:"waiting"`
	Paused     bool   `json:"paused"`
	LatencyMS  int64  `json:"latency_ms"`
	Groups     int64  `json:"groups"`
}

func newQueueJSON(qi *queue.QueueInfo) queueJSON {
	return queueJSON{Name: qi.Queue, Partitions: qi.Partitions, Pending: qi.Pending, Active: qi.Active,
		Scheduled: qi.Scheduled, Retry: qi.Retry, Dead: qi.Dead, Succeeded: qi.Succeeded, Waiting: qi.Waiting,
		Paused: qi.Paused, LatencyMS: qi.Latency.Milliseconds(), Groups: qi.ActiveGroups}
}

// groupJSON is a group of a queue.
type groupJSON struct {
	Group   string `json:"group"`
	Waiting int64  `json:"waiting"`
	Running int64  `json:"running"` // handlers running
	Ahead   int64  `json:"ahead"`   // leased ahead, held by a worker
	Weight  int    `json:"weight"`
	Paused  bool   `json:"paused"`
}

// newGroupJSON splits g's leased tasks by what the queue's live workers
// report (work), as the dashboard does.
func newGroupJSON(g queue.GroupInfo, work inspect.QueueWork) groupJSON {
	running, ahead := work.SplitGroup(g.Group, g.Running)
	return groupJSON{Group: g.Group, Waiting: g.Waiting, Running: running, Ahead: ahead, Weight: g.Weight, Paused: g.Paused}
}

// work is what the live workers serving q report.
func (s *session) work(ctx context.Context, q string) (inspect.QueueWork, error) {
	live, err := inspect.LiveWork(ctx, s.insp)
	return live[q], err
}
