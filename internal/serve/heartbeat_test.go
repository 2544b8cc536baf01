package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardq/shardq/queue"
)

// TestHeartbeatAfterAck: a task finishes, and its ack is written, between
// a heartbeat's look at the running tasks and its extend call. The extend
// finds the lease gone; the heartbeat must not warn of a lost lease nor
// cancel anything (an operator trial saw that spurious warning once in
// 20,000 tasks).
func TestHeartbeatAfterAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.enqueue(t, queue.NewRawTask("t", nil), queue.In("q"))
	s, p := unstarted(t, b, succeed)
	var logs syncBuffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))
	l := popN(t, s, p, 1)[0]
	job, err := s.newJob(p, l)
	must(t, err)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &running{Context: rctx, p: p, job: job, cancel: cancel}
	s.running.add(r)
	s.probe = &ProbeFuncs{OnBeforeExtend: func() {
		// the handler returns and its ack lands before the extend
		s.running.remove(r)
		if _, err := s.writeOnce([]outcome{{p: p, id: job.sid, token: job.token, kind: outcomeAck, delayMS: -1}}); err != nil {
			t.Error(err)
		}
	}}
	must(t, s.beat(ctx))
	if cause := context.Cause(rctx); cause != nil {
		t.Fatalf("the finished task's context was cancelled: %v", cause)
	}
	if out := string(logs.Bytes()); strings.Contains(out, "lease lost") {
		t.Fatalf("a finished task was reported as a lost lease:\n%s", out)
	}
}
