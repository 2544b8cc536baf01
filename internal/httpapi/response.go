package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/shardq/shardq/queue"
)

// taskInfo is a task as the API answers it (openapi.json, TaskInfo).
type taskInfo struct {
	ID        string `json:"id"`
	Queue     string `json:"queue"`
	Partition int    `json:"partition"`
	Type      string `json:"type"`
	State     string `json:"state"`
	// Payload is the payload when it is JSON; else PayloadBase64 holds
	// its bytes (a Go producer's msgpack, or raw bytes)
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	Result        json.RawMessage   `json:"result,omitempty"`
	ResultBase64  []byte            `json:"result_base64,omitempty"`
	Redacted      bool              `json:"redacted,omitempty"`
	MaxRetry      int               `json:"max_retry"`
	Attempts      int               `json:"attempts"`
	Group         string            `json:"group,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	EnqueuedAt    *time.Time        `json:"enqueued_at,omitempty"`
	NextProcessAt *time.Time        `json:"next_process_at,omitempty"`
	FinishedAt    *time.Time        `json:"finished_at,omitempty"`
	LastError     string            `json:"last_error,omitempty"`
	WorkflowID    string            `json:"workflow_id,omitempty"`
	// Duplicate: the task ID was taken, and this is the task that holds it
	Duplicate bool `json:"duplicate,omitempty"`
	// NotReplicated: enqueued, but fewer replicas than WaitReplicas
	// confirmed the write in time (queue.ErrNotReplicated)
	NotReplicated bool `json:"not_replicated,omitempty"`
}

// infoOf is ti as the API answers it.
func infoOf(ti *queue.TaskInfo) *taskInfo {
	out := &taskInfo{ID: ti.ID, Queue: ti.Queue, Partition: ti.Partition, Type: ti.Type, State: string(ti.State),
		Redacted: ti.Redacted, MaxRetry: ti.MaxRetry, Attempts: ti.Attempts, Group: ti.Group, Headers: ti.Headers,
		EnqueuedAt: timeOrNil(ti.EnqueuedAt), NextProcessAt: timeOrNil(ti.NextProcessAt), FinishedAt: timeOrNil(ti.FinishedAt),
		LastError: ti.LastError, WorkflowID: ti.WorkflowID}
	out.Payload, out.PayloadBase64 = jsonOrBytes(ti.Payload, ti.Raw)
	out.Result, out.ResultBase64 = jsonOrBytes(ti.Result, true)
	return out
}

// jsonOrBytes returns b as JSON when it is raw bytes that are valid JSON,
// else as bytes (base64 in the answer); neither when b is empty.
func jsonOrBytes(b []byte, raw bool) (json.RawMessage, []byte) {
	switch {
	case len(b) == 0:
		return nil, nil
	case raw && json.Valid(b):
		return json.RawMessage(b), nil
	}
	return nil, b
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// apiError is an error answer's body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an error answer whose code is the status's name.
func writeError(w http.ResponseWriter, status int, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = codeOf(status), msg
	writeJSON(w, status, e)
}

// codeOf names an error status for the answer's code.
func codeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "duplicate_unique_task"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusTooManyRequests:
		return "queue_full"
	case http.StatusInsufficientStorage:
		return "redis_out_of_memory"
	}
	return "unavailable"
}

// statusOf is the status of an enqueue or read error.
func statusOf(err error) int {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBody), errors.Is(err, queue.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, queue.ErrDuplicateUniqueTask):
		return http.StatusConflict
	case errors.Is(err, queue.ErrQueueFull):
		return http.StatusTooManyRequests
	case errors.Is(err, queue.ErrRedisOutOfMemory):
		return http.StatusInsufficientStorage
	}
	return http.StatusServiceUnavailable
}
