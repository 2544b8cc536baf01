package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/shardq/shardq/queue"
)

// taskRequest is one task as a request gives it (openapi.json, Task).
// Durations are whole milliseconds, times RFC 3339: every language has
// both.
type taskRequest struct {
	Type          string            `json:"type"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 *string           `json:"payload_base64,omitempty"`
	TaskID        string            `json:"task_id,omitempty"`
	DelayMS       *int64            `json:"delay_ms,omitempty"`
	ProcessAt     *time.Time        `json:"process_at,omitempty"`
	MaxRetry      *int              `json:"max_retry,omitempty"`
	TimeoutMS     *int64            `json:"timeout_ms,omitempty"`
	Deadline      *time.Time        `json:"deadline,omitempty"`
	RetentionMS   *int64            `json:"retention_ms,omitempty"`
	Group         string            `json:"group,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Unique        *uniqueRequest    `json:"unique,omitempty"`
}

// uniqueRequest is a task's uniqueness: queue.Unique, UniqueBy and
// UniqueUntilFinished.
type uniqueRequest struct {
	// ID is the caller's uniqueness ID; "" is the type and payload.
	ID string `json:"id,omitempty"`
	// TTLMS is how long the lock holds; required unless UntilFinished.
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// UntilFinished holds the lock while the task lives, and AfterMS
	// after it finished.
	UntilFinished bool  `json:"until_finished,omitempty"`
	AfterMS       int64 `json:"after_ms,omitempty"`
}

// batchRequest is a batch: tasks for one queue, one round trip.
type batchRequest struct {
	Tasks []taskRequest `json:"tasks"`
}

// errBody is a request body that does not decode.
var errBody = errors.New("bad request body")

// decodeBody decodes r's body, one JSON value, into v: unknown fields
// and trailing data are refused, so a typo says so instead of being
// dropped. The body's bound is http.MaxBytesReader's (ServeHTTP).
func decodeBody(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return fmt.Errorf("%w: %v", errBody, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON value", errBody)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", errBody)
	}
	return nil
}

// task returns the queue task req describes, for queue q, its options
// its own: Enqueue checks them. A payload given as JSON is stored as its compact JSON bytes, a
// raw task, which Task.Decode and worker.Typed read as JSON; one given in
// base64 is stored as its bytes.
func (req *taskRequest) task(q string) (*queue.Task, error) {
	if req.Type == "" {
		return nil, fmt.Errorf("%w: the task has no type", errBody)
	}
	var payload []byte
	switch {
	case len(req.Payload) > 0 && req.PayloadBase64 != nil:
		return nil, fmt.Errorf("%w: give payload or payload_base64, not both", errBody)
	case len(req.Payload) > 0:
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Payload); err != nil {
			return nil, fmt.Errorf("%w: payload: %v", errBody, err)
		}
		payload = buf.Bytes()
	case req.PayloadBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.PayloadBase64)
		if err != nil {
			return nil, fmt.Errorf("%w: payload_base64: %v", errBody, err)
		}
		payload = b
	}
	opts := []queue.Option{queue.In(q)}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	if req.TaskID != "" {
		opts = append(opts, queue.TaskID(req.TaskID))
	}
	if req.DelayMS != nil && req.ProcessAt != nil {
		return nil, fmt.Errorf("%w: give delay_ms or process_at, not both", errBody)
	}
	if req.DelayMS != nil {
		opts = append(opts, queue.ProcessIn(ms(*req.DelayMS)))
	}
	if req.ProcessAt != nil {
		opts = append(opts, queue.ProcessAt(*req.ProcessAt))
	}
	if req.MaxRetry != nil {
		opts = append(opts, queue.MaxRetry(*req.MaxRetry))
	}
	if req.TimeoutMS != nil {
		opts = append(opts, queue.Timeout(ms(*req.TimeoutMS)))
	}
	if req.Deadline != nil {
		opts = append(opts, queue.Deadline(*req.Deadline))
	}
	if req.RetentionMS != nil {
		opts = append(opts, queue.Retention(ms(*req.RetentionMS)))
	}
	if req.Group != "" {
		opts = append(opts, queue.Group(req.Group))
	}
	if len(req.Headers) > 0 {
		opts = append(opts, queue.Headers(req.Headers))
	}
	if u := req.Unique; u != nil {
		uo, err := u.options(ms)
		if err != nil {
			return nil, err
		}
		opts = append(opts, uo...)
	}
	return queue.NewRawTask(req.Type, payload, opts...), nil
}

// options returns the uniqueness options u names.
func (u *uniqueRequest) options(ms func(int64) time.Duration) ([]queue.Option, error) {
	if u.UntilFinished {
		opts := []queue.Option{queue.UniqueUntilFinished(ms(u.AfterMS))}
		if u.ID != "" {
			// UniqueUntilFinished's hold replaces UniqueBy's ttl
			opts = append(opts, queue.UniqueBy(u.ID, max(ms(u.TTLMS), time.Millisecond)))
		}
		return opts, nil
	}
	if u.TTLMS <= 0 {
		return nil, fmt.Errorf("%w: unique: ttl_ms %d: want >= 1, or until_finished", errBody, u.TTLMS)
	}
	if u.ID != "" {
		return []queue.Option{queue.UniqueBy(u.ID, ms(u.TTLMS))}, nil
	}
	return []queue.Option{queue.Unique(ms(u.TTLMS))}, nil
}
