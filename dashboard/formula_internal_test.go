package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestFormula: the queue page's formula shows the figure's inputs and
// result, and says why one worker is wanted while no handler time is known.
// (It moved here with the formula, from worker's TestScalingFollowsBacklog.)
func TestFormula(t *testing.T) {
	t.Parallel()
	sc := &queue.Scaling{DesiredWorkers: 3, NeededConcurrency: 5.5, Backlog: 3000, ArrivalRate: 12.5,
		MeanHandlerTime: 5 * time.Millisecond, WorkerConcurrency: 2, DrainTime: time.Second, MaxWorkers: 4}
	got := formula(sc)
	for _, want := range []string{"desired = ceil(needed / C) = ceil(5.50 / 2) → 3 workers", "12.50/s × 5ms", "3000 × 5ms / 1s", ", at most 4"} {
		if !strings.Contains(got, want) {
			t.Errorf("formula %q lacks %q", got, want)
		}
	}
	learn := formula(&queue.Scaling{DesiredWorkers: 1, Backlog: 100, WorkerConcurrency: 10, DrainTime: time.Minute})
	if !strings.Contains(learn, "→ 1 worker (handler time unknown yet") {
		t.Errorf("no handler time yet: %q", learn)
	}
}
