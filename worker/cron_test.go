package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/testclock"
	"github.com/shardq/shardq/queue"
)

// scheduling starts a server that only runs scheds: no handler, no queue.
func (b *bundle) scheduling(t *testing.T, scheds ...Schedule) *Server {
	t.Helper()
	s := b.schedulingAt(t, nil, scheds...)
	must(t, s.Start(context.Background()))
	return s
}

// schedulingAt returns a server, not started, that only runs scheds, on
// clock (nil: time.Now).
func (b *bundle) schedulingAt(t *testing.T, clock func() time.Time, scheds ...Schedule) *Server {
	t.Helper()
	cfg := Config{Config: b.qcfg, Schedules: scheds, Clock: clock}
	cfg.Logger = testLogger(t)
	s, err := NewServer(b.rdb, cfg, nil)
	must(t, err)
	return s
}

// cronTicks returns the tick of every task the schedule enqueued, from
// the recent feed (the task IDs are cron:<name>:<unix seconds>).
func cronTicks(t *testing.T, b *bundle, q string) []string {
	t.Helper()
	page, err := b.insp.ListTasks(context.Background(), queue.TaskQuery{Queue: q, Limit: 1000})
	must(t, err)
	var ticks []string
	for _, ti := range page.Tasks {
		ticks = append(ticks, ti.ID[strings.LastIndex(ti.ID, ":")+1:])
	}
	sort.Strings(ticks)
	return ticks
}

// TestCronExactlyOncePerTick: three servers that only schedule run the
// same @every 1s schedule for five seconds: one enqueue per tick, none
// twice.
func TestCronExactlyOncePerTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sched := Schedule{Name: "heartbeat", Spec: "@every 1s", Task: queue.NewRawTask("ping", nil), Options: []queue.Option{queue.In("cron")}}
	var ss []*Server
	start := time.Now()
	for range 3 {
		ss = append(ss, b.scheduling(t, sched))
	}
	time.Sleep(5*time.Second - time.Since(start))
	for _, s := range ss {
		must(t, s.Shutdown(context.Background()))
	}
	ticks := cronTicks(t, b, "cron")
	if len(ticks) < 4 || len(ticks) > 6 {
		t.Fatalf("%d enqueues in 5s of @every 1s on three schedulers, want 5±1: %v", len(ticks), ticks)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i] == ticks[i-1] {
			t.Fatalf("tick %s enqueued twice", ticks[i])
		}
	}
	infos, err := b.insp.Schedules(context.Background())
	must(t, err)
	if len(infos) != 1 || infos[0].Name != "heartbeat" || infos[0].Queue != "cron" || infos[0].LastRun.IsZero() ||
		!infos[0].NextRun.After(infos[0].LastRun) || infos[0].Spec != "@every 1s" {
		t.Fatalf("Schedules = %+v", infos)
	}
}

// TestCronMissedTicks: a scheduling server stopped for three ticks and a
// new one started follow the schedule's RunMissed, and record it under
// the policy's stored name, which the Inspector reads.
func TestCronMissedTicks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		runMissed bool
		policy    string // as Redis stores it
		extra     int    // enqueues for the missed stretch
	}{{false, "skip", 0}, {true, "run-once", 1}} {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			sched := Schedule{Name: "job", Spec: "@every 1s", Task: queue.NewRawTask("job", nil), RunMissed: c.runMissed}
			s := b.scheduling(t, sched)
			time.Sleep(2200 * time.Millisecond)
			must(t, s.Shutdown(context.Background()))
			before := cronTicks(t, b, queue.DefaultQueue)
			time.Sleep(3300 * time.Millisecond) // three ticks pass with no scheduler
			restart := time.Now()
			s = b.scheduling(t, sched)
			// wait for its first on-time tick, so a slow start under load
			// is not mistaken for a skip
			waitFor(t, 10*time.Second, "the restarted scheduler's first tick", func() bool {
				for _, tick := range cronTicks(t, b, queue.DefaultQueue) {
					var sec int64
					fmt.Sscan(tick, &sec)
					if !time.Unix(sec, 0).Before(restart.Add(-tickGrace)) {
						return true
					}
				}
				return false
			})
			must(t, s.Shutdown(context.Background()))
			after := cronTicks(t, b, queue.DefaultQueue)
			var missedRuns []string
			for _, tick := range after[len(before):] {
				var sec int64
				fmt.Sscan(tick, &sec)
				if time.Unix(sec, 0).Before(restart.Add(-tickGrace)) {
					missedRuns = append(missedRuns, tick)
				}
			}
			if len(missedRuns) != c.extra {
				t.Fatalf("policy %s: %d enqueues for missed ticks (%v), want %d; before %v after %v",
					c.policy, len(missedRuns), missedRuns, c.extra, before, after)
			}
			infos, err := b.insp.Schedules(context.Background())
			must(t, err)
			if len(infos) != 1 || infos[0].Missed != c.policy {
				t.Fatalf("RunMissed %v: Schedules = %+v, want Missed %q", c.runMissed, infos, c.policy)
			}
		})
	}
}

func TestCronSpecs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := queue.NewRawTask("t", nil)
	good := []string{"*/5 * * * *", "0 30 * * * *", "@hourly", "@every 90s", "CRON_TZ=America/New_York 0 6 * * *", "0 9 * * MON-FRI"}
	for _, spec := range good {
		if _, err := NewServer(b.rdb, Config{Schedules: []Schedule{{Spec: spec, Task: task}}}, nil); err != nil {
			t.Errorf("spec %q: %v", spec, err)
		}
	}
	bad := []Schedule{
		{Spec: "* * *", Task: task},
		{Spec: "61 * * * *", Task: task},
		{Spec: "@fortnightly", Task: task},
		{Spec: "CRON_TZ=Mars/Olympus 0 6 * * *", Task: task},
		{Spec: "@hourly"},
		{Name: "has space", Spec: "@hourly", Task: task},
		{Spec: "@hourly", Task: task, Options: []queue.Option{queue.In("{bad}")}},
		{Spec: "@every 300ms", Task: task},  // would tick every second
		{Spec: "@every 1500ms", Task: task}, // likewise
		// never fire: the scheduler spun on them and recorded year 1
		{Spec: "0 0 30 2 *", Task: task},
		{Spec: "0 0 31 4 *", Task: task},
		{Spec: "0 0 0 31 11 *", Task: task},
		// a zone and no fields: the cron parser panicked on them
		{Spec: "TZ=", Task: task},
		{Spec: "CRON_TZ=Europe/Paris", Task: task},
		{Spec: "CRON_TZ=UTC\t* * * * *", Task: task},
		{Spec: "TZ=UTC   ", Task: task},
	}
	for _, sc := range bad {
		if _, err := NewServer(b.rdb, Config{Schedules: []Schedule{sc}}, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "schedule") {
			t.Errorf("schedule %+v: err = %v, want ErrInvalid naming the schedule", sc, err)
		}
	}
	if _, err := NewServer(b.rdb, Config{Schedules: []Schedule{{Spec: "0 0 30 2 *", Task: task}}}, nil); err == nil ||
		!strings.Contains(err.Error(), "never fires") {
		t.Errorf("30 February: err = %v, want one that says it never fires", err)
	}
	// 29 February fires once in four years: it is a spec that runs.
	if _, err := NewServer(b.rdb, Config{Schedules: []Schedule{{Spec: "0 0 29 2 *", Task: task}}}, nil); err != nil {
		t.Errorf("29 February: %v", err)
	}
	dup := []Schedule{{Spec: "@hourly", Task: task}, {Spec: "@daily", Task: task}}
	if _, err := NewServer(b.rdb, Config{Schedules: dup}, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "two schedules") {
		t.Errorf("duplicate names: err = %v", err)
	}
	// @every ticks are aligned to the epoch, so processes agree on them.
	p, _ := parseSchedule(Schedule{Spec: "@every 90s", Task: task}, time.Now())
	a := p.next(time.Unix(1000, 0))
	c := p.next(time.Unix(1010, 0))
	if !a.Equal(c) || a.Unix()%90 != 0 {
		t.Errorf("@every 90s ticks after 1000 and 1010: %v and %v, want the same multiple of 90s", a.Unix(), c.Unix())
	}
	// Without CRON_TZ, specs are UTC whatever the machine's zone.
	p, _ = parseSchedule(Schedule{Spec: "0 6 * * *", Task: task}, time.Now())
	if n := p.next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); n.UTC().Hour() != 6 {
		t.Errorf("0 6 * * * next = %v, want 06:00 UTC", n.UTC())
	}
}

// TestServerRunsSchedules: schedules in worker.Config are enqueued by the
// server and run by it.
func TestServerRunsSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := newRecorder(nil)
	b.server(t, Config{Schedules: []Schedule{{Spec: "@every 1s", Task: queue.NewRawTask("tick", nil)}}}, rec)
	waitFor(t, 4*time.Second, "two ticks run", func() bool { return rec.total() >= 2 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !strings.HasPrefix(rec.tasks[0].ID, "cron:tick:") {
		t.Fatalf("scheduled task ID %q", rec.tasks[0].ID)
	}
}

// TestServerOnlySchedules: a server with Schedules and a nil handler
// ticks them and serves no queue: it leases nothing and registers no
// worker, and it starts and shuts down once, as any server. A nil handler
// is refused without schedules, and with queues to serve.
func TestServerOnlySchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	task := queue.NewRawTask("tick", nil)
	sched := Schedule{Spec: "@every 1s", Task: task}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"no schedules", Config{}},
		{"queues", Config{Queues: map[string]int{"q": 1}, Schedules: []Schedule{sched}}},
		{"patterns", Config{QueuePatterns: map[string]int{"q*": 1}, Schedules: []Schedule{sched}}},
	} {
		if _, err := NewServer(b.rdb, c.cfg, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "nil handler") {
			t.Errorf("%s: a nil handler: err = %v, want ErrInvalid naming it", c.name, err)
		}
	}
	s := b.scheduling(t, sched)
	if err := s.Start(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a second Start: %v, want ErrInvalid", err)
	}
	waitFor(t, 10*time.Second, "two ticks enqueued", func() bool {
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue) // ErrNotFound before the first
		return err == nil && qi.Pending >= 2
	})
	// no handler: the ticks' tasks wait for a server that runs their queue
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Active != 0 || qi.Pending < 2 {
		t.Fatalf("queue %+v, want the ticks pending and none active", qi)
	}
	workers, err := b.insp.Workers(ctx)
	must(t, err)
	if len(workers) != 0 {
		t.Fatalf("a server that only schedules registered as a worker: %+v", workers[0])
	}
	must(t, s.Shutdown(ctx))
	if err := s.Shutdown(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a second Shutdown: %v, want ErrInvalid", err)
	}
	if err := s.Start(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Start after Shutdown: %v, want ErrInvalid", err)
	}
	// Run is Start, then Shutdown when its context ends
	run, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	r := b.schedulingAt(t, nil, sched)
	go func() { ran <- r.Run(run) }()
	time.Sleep(100 * time.Millisecond)
	stop()
	select {
	case err := <-ran:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's end")
	}
}

// TestCronTickOnATestClock: a server's schedules on a clock the test
// moves tick when ticked at the times their next tick is reported, each
// tick once, and a tick refuses to run beside Start's loop. It ticks and
// reads the queues and the next tick through internal/testclock, as
// queuetest does.
func TestCronTickOnATestClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)
	s := b.schedulingAt(t, func() time.Time { return now }, Schedule{
		Name: "minutely", Spec: "* * * * *", Task: queue.NewRawTask("m", nil), Options: []queue.Option{queue.In("cron")}})
	if got := testclock.Queues(s); len(got) != 1 || got[0] != "cron" {
		t.Fatalf("queues = %v", got)
	}
	must(t, testclock.Tick(ctx, s)) // records the start: nothing due
	for i := range 3 {
		next := testclock.Next(s)
		if want := time.Date(2030, 1, 1, 0, 1+i, 0, 0, time.UTC); !next.Equal(want) {
			t.Fatalf("next tick = %v, want %v", next, want)
		}
		now = next
		must(t, testclock.Tick(ctx, s))
		must(t, testclock.Tick(ctx, s)) // twice at one time: still one task
	}
	if ticks := cronTicks(t, b, "cron"); len(ticks) != 3 {
		t.Fatalf("%d ticks enqueued, want 3: %v", len(ticks), ticks)
	}
	must(t, s.Start(ctx))
	if err := testclock.Tick(ctx, s); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a tick on a started server: %v, want ErrInvalid", err)
	}
	must(t, s.Shutdown(ctx))
}

// never is a cron schedule with no next time, as robfig/cron's Next
// returns for a spec that matches no day within five years.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

// TestCronNoNextTick: a schedule whose cron has no next time (refused
// at registration, so this builds one by hand) enqueues nothing, records
// no next run, and does not make the loop spin: it once slept a
// millisecond between ticks, enqueued a phantom task per pass under
// RunMissed and recorded its next run as year 1.
func TestCronNoNextTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)
	// a schedule of its own replaced below: a server without a handler needs one
	srv := b.schedulingAt(t, func() time.Time { return now }, Schedule{Spec: "@hourly", Task: queue.NewRawTask("n", nil)})
	s := srv.cron
	s.scheds = []*scheduled{{Schedule: Schedule{Name: "never", Task: queue.NewRawTask("n", nil), RunMissed: true},
		cron: never{}, queue: "cron", cursor: now.Add(-time.Hour)}}
	s.loaded = true
	for range 3 {
		must(t, s.tickNow(context.Background()))
		now = now.Add(time.Minute)
	}
	// the queue was never written to: no task, not even its registry entry
	if _, err := b.insp.ListTasks(context.Background(), queue.TaskQuery{Queue: "cron"}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a schedule with no next time enqueued into its queue: %v", err)
	}
	if got := s.sleepAfter(now); got != time.Hour {
		t.Fatalf("the loop sleeps %v after a schedule with no next time, want an hour", got)
	}
	if next := s.next(); !next.IsZero() {
		t.Fatalf("next tick = %v, want zero", next)
	}
	infos, err := b.insp.Schedules(context.Background())
	must(t, err)
	if len(infos) != 1 || infos[0].Next != 0 {
		t.Fatalf("recorded %+v, want one schedule with no next run", infos)
	}
}

// TestCronTwoSchedulersOneTask: two processes run the same schedule on
// one clock, and the tick due at midnight is enqueued once, under the
// tick's own ID. (It was ExampleScheduler, when ticking was public.)
func TestCronTwoSchedulersOneTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 23, 59, 30, 0, time.UTC)
	clock := func() time.Time { return now }
	sched := Schedule{
		Name:    "report:daily",
		Spec:    "0 0 * * *", // at midnight, UTC
		Task:    queue.NewRawTask("report:build", nil),
		Options: []queue.Option{queue.In("reports")},
	}
	a, c := b.schedulingAt(t, clock, sched), b.schedulingAt(t, clock, sched)
	if next := a.cron.next(); !next.Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("next tick = %v, want midnight", next)
	}
	for _, s := range []*Server{a, c} {
		must(t, s.cron.tickNow(ctx)) // the first tick only reads where the schedule left off
	}
	now = now.Add(30 * time.Second) // midnight
	for _, s := range []*Server{a, c} {
		must(t, s.cron.tickNow(ctx))
	}
	page, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: "reports", State: queue.StatePending})
	must(t, err)
	if len(page.Tasks) != 1 || page.Tasks[0].Type != "report:build" || page.Tasks[0].ID != "cron:report:daily:1767312000" {
		t.Fatalf("pending %+v, want one report:build under ID cron:report:daily:1767312000", page.Tasks)
	}
	if next := a.cron.next(); !next.Equal(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("next tick = %v, want the next midnight", next)
	}
}
