package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// FuzzCronSpec: no spec crashes the parser or makes a schedule that
// never fires: a spec is refused with ErrInvalid, or its next tick
// is after now and the one after it is later still.
func FuzzCronSpec(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "0 30 * * * *", "@hourly", "@every 90s", "0 0 29 2 *",
		"CRON_TZ=America/New_York 0 6 * * *", "0 9 * * MON-FRI", "0 0 30 2 *", "TZ=", "CRON_TZ=Europe/Paris",
		"TZ=UTC\t* * * * *", "@every 0s", "@every -1s", "0-59/0 * * * *", "* * * * * * *"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	task := queue.NewRawTask("t", nil)
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := parseSchedule(Schedule{Name: "f", Spec: spec, Task: task}, now)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("spec %q: error %v is not ErrInvalid", spec, err)
			}
			return
		}
		next := p.next(now)
		if !next.After(now) {
			t.Fatalf("spec %q accepted, next tick %v is not after %v", spec, next, now)
		}
		if after := p.next(next); !after.After(next) {
			t.Fatalf("spec %q accepted, the tick after %v is %v", spec, next, after)
		}
	})
}
