package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// keyStarts records, per group, the server's lease time of
// every task started.
type keyStarts struct {
	mu     sync.Mutex
	starts map[string][]time.Time
}

func (k *keyStarts) ProcessTask(_ context.Context, t *Task) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := string(t.Payload)
	k.starts[key] = append(k.starts[key], t.StartedAt)
	return nil
}

func (k *keyStarts) of(key string) []time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := slices.Clone(k.starts[key])
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	return s
}

// TestKeyRate: GroupRate 5 per second. A busy key's 30 tasks, enqueued
// first, start at most 5 in any one-second window, by the server's lease
// times, while the 4 tasks of a quiet key, behind them, start at once.
func TestKeyRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const rate, busy = 5, 30
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{GroupRate: rate, Per: time.Second}))
	var tasks []*queue.Task
	for i := range busy + 4 {
		key := "busy"
		if i >= busy {
			key = "quiet"
		}
		tasks = append(tasks, queue.NewRawTask("t", []byte(key), queue.Group(key), queue.TaskID(fmt.Sprint(key, i))))
	}
	_, err := b.client.EnqueueMany(ctx, tasks)
	must(t, err)
	h := &keyStarts{starts: map[string][]time.Time{}}
	b.server(t, Config{Concurrency: 8, ForwardInterval: 50 * time.Millisecond}, h)
	b.server(t, Config{Concurrency: 8, ForwardInterval: 50 * time.Millisecond}, h)

	waitFor(t, 30*time.Second, "the quiet key's tasks", func() bool { return len(h.of("quiet")) == 4 })
	// the busy key needs (busy-rate)/rate more seconds: the quiet key did
	// not wait for it
	if n := len(h.of("busy")); n >= busy-rate {
		t.Fatalf("the quiet key ran only after %d of the busy key's %d tasks", n, busy)
	}
	// over its rate, the busy key's tasks wait in its list, holding no slot
	li, err := b.insp.LimitInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if li.Groups["busy"].Waiting == 0 {
		t.Fatal("no busy task waits while its key is over its rate")
	}
	waitFor(t, time.Minute, "every busy task", func() bool { return len(h.of("busy")) == busy })
	for _, key := range []string{"busy", "quiet"} {
		s := h.of(key)
		for i := rate; i < len(s); i++ {
			if d := s[i].Sub(s[i-rate]); d < time.Second {
				t.Fatalf("key %s: starts %d and %d are %v apart: %d starts within one second, limit %d", key, i-rate, i, d, rate+1, rate)
			}
		}
	}
	// how close to its rate the busy key ran is a figure, not an
	// assertion: timing under load is not the test's to judge
	s := h.of("busy")
	t.Logf("busy key: %d starts over %v (%.2f/s after the first window)", len(s), s[len(s)-1].Sub(s[0]),
		float64(len(s)-rate-1)/s[len(s)-1].Sub(s[rate]).Seconds())
	// nothing left behind: a scheduled record is gone once its task ran
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Scheduled != 0 || qi.Pending != 0 {
		t.Fatalf("left: %+v", qi)
	}
}

// TestKeyRateBadValue: a negative GroupRate is refused, naming it.
func TestKeyRateBadValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.insp.SetLimits(context.Background(), "q", queue.Limits{GroupRate: -1}); err == nil {
		t.Fatal("SetLimits(GroupRate -1) succeeded")
	}
	_, err := NewServer(b.rdb, Config{Limits: map[string]queue.Limits{"q": {GroupRate: -2}}}, newRecorder(nil))
	if err == nil {
		t.Fatal("NewServer with GroupRate -2 succeeded")
	}
}
