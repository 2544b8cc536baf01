package worker

import (
	"testing"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/queue"
)

// TestObserverStates: HandlerEvent.State names the state each kind of
// outcome leaves its task in.
func TestObserverStates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    outcome
		want queue.State
	}{
		{"ack", outcome{kind: outcomeAck}, queue.StateSucceeded},
		{"ack kept", outcome{kind: outcomeAck, retentionMS: 1000}, queue.StateSucceeded},
		{"retry", outcome{kind: outcomeFail, delayMS: 500}, queue.StateRetry},
		{"retry at once", outcome{kind: outcomeFail}, queue.StateRetry},
		{"dead", outcome{kind: outcomeFail, delayMS: codes.None}, queue.StateDead},
		{"snooze", outcome{kind: outcomeFail, delayMS: 500, snooze: 1}, queue.StateScheduled},
		{"requeue", outcome{kind: outcomeRequeue}, queue.StatePending},
	} {
		if got := stateOf(c.o); got != c.want {
			t.Errorf("%s: state %q, want %q", c.name, got, c.want)
		}
	}
}
