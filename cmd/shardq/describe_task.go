package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// describeTask shows a task: every field, its payload and its result.
func describeTask(ctx context.Context, m *Main, s *session, q, id string, asJSON bool) error {
	ti, err := s.insp.GetTask(ctx, q, id)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	v := newTaskJSON(ti, true)
	if asJSON {
		return writeJSON(m.Stdout, v)
	}
	now := time.Now()
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339) + " (" + ago(t, now) + ")"
	}
	var f fields
	f.add("ID", ti.ID)
	f.add("Queue", fmt.Sprintf("%s (partition %d)", ti.Queue, ti.Partition))
	f.add("Type", ti.Type)
	f.add("State", string(ti.State))
	f.add("Attempts", fmt.Sprintf("%d of %d", ti.Attempts, ti.MaxRetry+1))
	f.opt("Group", ti.Group)
	f.opt("Uniqueness ID", ti.UniqueBy)
	if ti.Timeout > 0 {
		f.add("Timeout", ti.Timeout.String())
	}
	if ti.Retention > 0 {
		f.add("Retention", ti.Retention.String())
	}
	f.opt("Deadline", at(ti.Deadline))
	f.opt("Enqueued", at(ti.EnqueuedAt))
	f.opt("Next run", at(ti.NextProcessAt))
	f.opt("Started", at(ti.StartedAt))
	f.opt("Finished", at(ti.FinishedAt))
	f.opt("Last failed", at(ti.LastFailedAt))
	f.opt("Worker", ti.Worker)
	if ti.WorkflowID != "" {
		f.add("Workflow", ti.WorkflowID+" (node "+ti.Node+")")
	}
	if v.CancelRequested {
		f.add("Cancel", "requested, waiting for the worker's next heartbeat")
	}
	keys := make([]string, 0, len(ti.Headers))
	for k := range ti.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f.add("Header "+k, ti.Headers[k])
	}
	if ti.Progress != nil {
		f.add("Progress", fmt.Sprintf("%d%% %s", ti.Progress.Percent, ti.Progress.Message))
	}
	f.opt("Encrypted with", ti.EncryptedWith)
	if ti.Redacted {
		f.add("Redacted", "some values are encrypted with a key this key ring lacks (--key-file)")
	}
	f.opt("Last error", ti.LastError)
	f.add("Payload", shown(v.Payload, v.PayloadEncoding))
	if v.Result != nil {
		f.add("Result", *v.Result)
	} else if v.ResultBase64 != "" {
		f.add("Result", v.ResultBase64+" (base64)")
	}
	f.write(m.Stdout)
	return nil
}

// shown renders a payload for people: JSON compact, text as it is, other
// bytes as base64, naming how it was stored when it is not JSON or text.
func shown(payload any, encoding string) string {
	switch encoding {
	case "":
		return "(empty)"
	case "redacted":
		return "(redacted: encrypted with a key this key ring lacks)"
	case "text":
		return payload.(string)
	case "base64":
		return payload.(string) + " (base64)"
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Sprint(payload)
	}
	s := string(b)
	if encoding == "msgpack" {
		s += " (msgpack)"
	}
	return strings.TrimSpace(s)
}
