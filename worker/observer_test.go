package worker

import (
	"errors"
	"testing"

	"github.com/shardq/shardq/internal/serve"
	"github.com/shardq/shardq/queue"
)

// TestObserverStates: HandlerEvent.State names the state each verdict
// leaves its task in.
func TestObserverStates(t *testing.T) {
	t.Parallel()
	failed := errors.New("failed")
	for _, c := range []struct {
		name string
		v    serve.Verdict
		want queue.State
	}{
		{"ack", serve.Verdict{}, queue.StateSucceeded},
		{"retry", serve.Verdict{Err: failed, Delay: 500}, queue.StateRetry},
		{"retry at once", serve.Verdict{Err: failed}, queue.StateRetry},
		{"dead", serve.Verdict{Err: failed, Delay: -1}, queue.StateDead},
		{"snooze", serve.Verdict{Err: failed, Delay: 500, Snooze: true}, queue.StateScheduled},
		{"requeue", serve.Verdict{Requeue: true}, queue.StatePending},
	} {
		if got := stateOf(c.v); got != c.want {
			t.Errorf("%s: state %q, want %q", c.name, got, c.want)
		}
	}
}
