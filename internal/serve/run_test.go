package serve

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/queue"
)

// TestDictionaryUnavailableRetries: a task whose dictionary could not be
// read (Redis failed) is retried, not sent to dead.
func TestDictionaryUnavailableRetries(t *testing.T) {
	o := undecodable(nil, leased{id: "x"}, fmt.Errorf("payload: %w: connection refused", envelope.ErrDictUnavailable))
	if o.delayMS != dictRetry.Milliseconds() {
		t.Fatalf("delay %d ms, want a retry in %v", o.delayMS, dictRetry)
	}
	if o := undecodable(nil, leased{id: "x"}, fmt.Errorf("payload: %w", envelope.ErrNoDict)); o.delayMS >= 0 {
		t.Fatalf("a lost dictionary: delay %d ms, want dead", o.delayMS)
	}
}

// TestOutcomeOf: each verdict becomes the outcome that writes it: an
// ack keeps the job's retention and uniqueness ID, a failure its delay (a
// negative one: dead), a snooze its flag, a requeue nothing else.
func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	s := &Engine{cfg: Config{Config: queue.Config{Prefix: "p"}}, flows: &flows{}}
	p := &part{queue: "q"}
	j := &Job{sid: "id", token: 7, retention: time.Second, unique: "u"}
	failed := errors.New("failed")
	for _, c := range []struct {
		name string
		v    Verdict
		want outcome
	}{
		{"ack", Verdict{}, outcome{kind: outcomeAck, retentionMS: 1000, unique: "u"}},
		{"retry", Verdict{Err: failed, Delay: 500 * time.Millisecond}, outcome{kind: outcomeFail, err: "failed", delayMS: 500}},
		{"retry at once", Verdict{Err: failed}, outcome{kind: outcomeFail, err: "failed"}},
		{"dead", Verdict{Err: failed, Delay: -1}, outcome{kind: outcomeFail, err: "failed", delayMS: codes.None}},
		{"snooze", Verdict{Err: failed, Delay: time.Second, Snooze: true}, outcome{kind: outcomeFail, err: "failed", delayMS: 1000, snooze: 1}},
		{"requeue", Verdict{Requeue: true}, outcome{kind: outcomeRequeue}},
	} {
		c.want.p, c.want.id, c.want.token = p, "id", 7
		if got := s.outcomeOf(p, j, c.v); got != c.want {
			t.Errorf("%s: outcome %+v, want %+v", c.name, got, c.want)
		}
	}
}
