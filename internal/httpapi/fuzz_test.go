package httpapi

import (
	"strings"
	"testing"
)

// FuzzTaskRequest: no body a caller sends makes decoding it, or building
// its task, panic; what decodes builds a task or a clear error.
func FuzzTaskRequest(f *testing.F) {
	for _, s := range []string{
		`{"type":"t"}`,
		`{"type":"t","payload":{"a":[1,2,{"b":null}]},"delay_ms":5,"max_retry":3,"group":"g","headers":{"k":"v"}}`,
		`{"type":"t","payload_base64":"AAEC","unique":{"id":"x","until_finished":true,"after_ms":5}}`,
		`{"type":"t","process_at":"2030-01-01T00:00:00Z","deadline":"2030-01-02T00:00:00+02:00","timeout_ms":1,"retention_ms":0}`,
		`{"tasks":[{"type":"t"}]}`, `{"type":"t","payload":1e999}`, `{"type":"\u0000"}`, `[]`, `{`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req taskRequest
		if err := decodeBody(strings.NewReader(body), &req); err != nil {
			return
		}
		task, err := req.task("q")
		if err == nil && task == nil {
			t.Fatal("no task and no error")
		}
		var b batchRequest
		_ = decodeBody(strings.NewReader(body), &b)
	})
}
