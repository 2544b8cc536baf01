package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/wait"

	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// Schedule enqueues Task periodically (Config.Schedules). Any number of
// servers may carry the same schedules: each tick is enqueued exactly
// once, because its task ID is derived from the schedule's name and the
// tick's time, and the queue rejects a second task with a claimed ID.
type Schedule struct {
	// Name identifies the schedule across processes: every server that
	// runs a schedule of this name shares its ticks. Defaults to the task's type.
	Name string
	// Spec is a cron spec: five fields (minute hour day-of-month month
	// day-of-week), or six with seconds first, or a descriptor such as
	// "@hourly" or "@every 90s" (whole seconds, at least one);
	// "CRON_TZ=Europe/Paris " in front sets its time zone.
	Spec string
	// Location is the time zone of a spec without CRON_TZ. Defaults to UTC,
	// so servers on machines in other zones agree.
	Location *time.Location
	// Task and Options are what each tick enqueues. A TaskID option is
	// replaced: each tick's task ID is cron:<name>:<unix time of the
	// tick>, which is what makes the tick run once.
	Task    *queue.Task
	Options []queue.Option
	// RunMissed says what happens to ticks that passed while no server
	// ran the schedule (all were down, or stalled past the tick). false, the
	// default, skips them: the schedule goes on at its next tick. true
	// enqueues one task for the latest missed tick, however many were
	// missed, then goes on.
	RunMissed bool
}

// missedPolicy names a schedule's RunMissed as Redis stores it and
// queue.ScheduleInfo.Missed reads it: "skip" or "run-once".
func missedPolicy(runMissed bool) string {
	if runMissed {
		return "run-once"
	}
	return "skip"
}

// tickGrace is how late a tick may be enqueued and still count as on time;
// older ones are missed and follow the schedule's policy.
const tickGrace = time.Second

// scheduler enqueues the tasks of a Server's schedules, at each tick.
type scheduler struct {
	rdb    redis.UniversalClient
	prefix string
	clock  func() time.Time
	client *queue.Client
	log    *slog.Logger
	scheds []*scheduled
	stop   context.CancelFunc
	done   sync.WaitGroup
	mu     sync.Mutex
	loaded bool // cursors read from Redis (by start or the first tick)
}

type scheduled struct {
	Schedule
	cron   cron.Schedule
	every  time.Duration // for @every: ticks are multiples of it since the epoch
	queue  string
	cursor time.Time // ticks up to here are dealt with
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// newScheduler validates every schedule and returns their scheduler,
// which enqueues with qc (normalized) and ticks by clock (nil: time.Now).
func newScheduler(rdb redis.UniversalClient, qc queue.Config, schedules []Schedule, clock func() time.Time) (*scheduler, error) {
	if clock == nil {
		clock = time.Now
	}
	client, err := queue.NewClient(rdb, qc)
	if err != nil {
		return nil, err
	}
	s := &scheduler{rdb: rdb, prefix: qc.Prefix, clock: clock, client: client, log: qc.Logger}
	names := map[string]bool{}
	now := clock()
	for _, sc := range schedules {
		p, err := parseSchedule(sc, now)
		if err != nil {
			return nil, err
		}
		if names[p.Name] {
			return nil, fmt.Errorf("%w: two schedules named %q", ErrInvalid, p.Name)
		}
		names[p.Name] = true
		s.scheds = append(s.scheds, p)
	}
	return s, nil
}

// parseSchedule checks sc and returns it ready to tick from now. A spec
// that has no time in the five years after now (30 February) is refused:
// it would never fire.
func parseSchedule(sc Schedule, now time.Time) (*scheduled, error) {
	if sc.Task == nil {
		return nil, fmt.Errorf("%w: schedule %q has no task", ErrInvalid, sc.Name)
	}
	sc.Name = cmp.Or(sc.Name, sc.Task.Type())
	if err := config.CheckName(sc.Name); err != nil || len(sc.Name) > 100 {
		return nil, fmt.Errorf("%w: schedule name %q: want 1 to 100 bytes without braces, spaces or control characters", ErrInvalid, sc.Name)
	}
	spec := strings.TrimSpace(sc.Spec)
	if !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
		spec = "CRON_TZ=" + cmp.Or(sc.Location, time.UTC).String() + " " + spec
	}
	c, err := parseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: spec %q: %v", ErrInvalid, sc.Name, sc.Spec, err)
	}
	q, err := config.QueueOf(sc.Task, sc.Options)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: %w", ErrInvalid, sc.Name, err)
	}
	p := &scheduled{Schedule: sc, cron: c, queue: q}
	if d, ok := c.(cron.ConstantDelaySchedule); ok {
		// the parser rounds "@every 300ms" up to 1s and "@every 1500ms"
		// down to 1s: say so rather than tick at another rate
		_, every, _ := strings.Cut(spec, "@every ")
		if want, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && want != d.Delay {
			return nil, fmt.Errorf("%w: schedule %q: spec %q: @every takes whole seconds, at least 1s", ErrInvalid, sc.Name, sc.Spec)
		}
		p.every = d.Delay
	}
	if p.next(now).IsZero() {
		return nil, fmt.Errorf("%w: schedule %q: spec %q never fires: it names no time in the five years after %s",
			ErrInvalid, sc.Name, sc.Spec, now.UTC().Format(time.DateOnly))
	}
	return p, nil
}

// parseSpec parses a cron spec that starts with its zone. The parser
// slices the zone up to the first space and panics when there is none
// ("CRON_TZ=Europe/Paris", "TZ="), so that is refused first; a panic of
// the parser on anything else is an error too, never a crash.
func parseSpec(spec string) (s cron.Schedule, err error) {
	_, fields, ok := strings.Cut(spec, " ")
	if !ok || strings.TrimSpace(fields) == "" {
		zone, _, _ := strings.Cut(spec, " ")
		return nil, fmt.Errorf("zone %q with no schedule after it", zone)
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("the cron parser failed on it: %v", r)
		}
	}()
	return cronParser.Parse(spec)
}

// next returns the first tick after t, or zero when there is none in the
// five years after t. @every ticks are aligned to the epoch, so every
// process computes the same ones.
func (p *scheduled) next(t time.Time) time.Time {
	if p.every > 0 {
		return t.Truncate(p.every).Add(p.every)
	}
	return p.cron.Next(t)
}

// start reads where each schedule left off and starts ticking.
func (s *scheduler) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return fmt.Errorf("%w: schedules started already", ErrInvalid)
	}
	if !s.loaded {
		if err := s.loadCursors(ctx); err != nil {
			return fmt.Errorf("schedules: %w", err)
		}
	}
	run, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.done.Add(1)
	go func() { defer s.done.Done(); s.loop(run) }()
	return nil
}

// shutdown stops ticking and waits for an enqueue under way; it returns
// ctx's error if ctx ended first.
func (s *scheduler) shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		return fmt.Errorf("%w: schedules not running", ErrInvalid)
	}
	s.stop()
	if !wait.Group(ctx, &s.done) {
		return ctx.Err()
	}
	return nil
}

// loadCursors starts each schedule after its last recorded run, so ticks
// missed while no server ran them are found; a new schedule starts now.
func (s *scheduler) loadCursors(ctx context.Context) error {
	raw, err := s.rdb.HGetAll(ctx, keys.Cron(s.prefix)).Result()
	if err != nil {
		return err
	}
	now := s.clock()
	for _, p := range s.scheds {
		p.cursor = now
		var info queue.ScheduleInfo
		if v, ok := raw[p.Name]; ok && json.Unmarshal([]byte(v), &info) == nil && info.Last > 0 {
			p.cursor = time.UnixMilli(info.Last)
		}
	}
	s.loaded = true
	return nil
}

// tickNow enqueues, once, what is due at the scheduler's clock now, as the
// running scheduler does on its own: the tick that is on time, and a
// missed one under RunMissed. It is for tests that move a clock of
// their own (Config.Clock) and tick at each time next reports, instead
// of start: the loop start runs sleeps in real time. queuetest reaches it
// through internal/testclock. Like start, the first tick reads where each
// schedule left off (a new schedule starts at the clock's now, so that it
// enqueues nothing for it). A tick on a started scheduler is
// ErrInvalid.
func (s *scheduler) tickNow(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return fmt.Errorf("%w: a tick on started schedules", ErrInvalid)
	}
	if !s.loaded {
		if err := s.loadCursors(ctx); err != nil {
			return fmt.Errorf("schedules tick: %w", err)
		}
	}
	now := s.clock()
	for _, p := range s.scheds {
		if err := s.tick(ctx, p, now); err != nil {
			return fmt.Errorf("schedule %q: %w", p.Name, err)
		}
	}
	return nil
}

// next returns the earliest next tick of the scheduler's schedules after
// where each left off (after the clock's now for a scheduler that has not
// read that yet); zero when it has no schedules. queuetest reaches it
// through internal/testclock.
func (s *scheduler) next() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, p := range s.scheds {
		from := p.cursor
		if !s.loaded {
			from = s.clock()
		}
		if t := p.next(from); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// queues returns the queues the scheduler's schedules enqueue into, each
// once. queuetest reaches it through internal/testclock.
func (s *scheduler) queues() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range s.scheds {
		if !seen[p.queue] {
			seen[p.queue] = true
			out = append(out, p.queue)
		}
	}
	return out
}

func (s *scheduler) loop(ctx context.Context) {
	var backoff wait.Backoff
	for ctx.Err() == nil {
		now := s.clock()
		failed := false
		for _, p := range s.scheds {
			if err := s.tick(ctx, p, now); err != nil {
				failed = true
				if ctx.Err() == nil {
					s.log.Warn("schedule tick failed; retrying", "schedule", p.Name, "err", err)
				}
			}
		}
		if failed {
			backoff.Sleep(ctx)
			continue
		}
		backoff.Reset()
		wait.Sleep(ctx, s.sleepAfter(now))
	}
}

// sleepAfter returns how long the loop sleeps after ticking at now: until
// the earliest next tick, at least a millisecond, at most an hour. A
// schedule with no next tick never shortens it, so no spec makes the loop
// spin.
func (s *scheduler) sleepAfter(now time.Time) time.Duration {
	sleep := time.Hour
	for _, p := range s.scheds {
		if next := p.next(p.cursor); !next.IsZero() {
			sleep = min(sleep, next.Sub(now))
		}
	}
	return max(sleep, time.Millisecond)
}

// tick enqueues what is due for p at now: the latest tick when it is on
// time, and, under RunMissed, the latest of the missed ones.
func (s *scheduler) tick(ctx context.Context, p *scheduled, now time.Time) error {
	var onTime, missed time.Time
	for t, n := p.next(p.cursor), 0; !t.IsZero() && !t.After(now); t, n = p.next(t), n+1 {
		if now.Sub(t) <= tickGrace {
			onTime = t
		} else {
			missed = t
		}
		if n > 100_000 { // a very long gap: the rest are missed too
			missed = now.Add(-tickGrace - time.Nanosecond)
			break
		}
	}
	if !missed.IsZero() && p.RunMissed {
		if err := s.enqueue(ctx, p, missed); err != nil {
			return err
		}
	} else if !missed.IsZero() {
		s.log.Info("skipped missed ticks", "schedule", p.Name, "latest", missed)
	}
	if !onTime.IsZero() {
		if err := s.enqueue(ctx, p, onTime); err != nil {
			return err
		}
	}
	p.cursor = now
	return s.mark(ctx, p, cmp.Or(onTime, missed))
}

// enqueue enqueues p's task for tick t under the tick's own ID; a
// duplicate means another server already did.
func (s *scheduler) enqueue(ctx context.Context, p *scheduled, t time.Time) error {
	id := "cron:" + p.Name + ":" + strconv.FormatInt(t.Unix(), 10)
	opts := append(p.Options[:len(p.Options):len(p.Options)], queue.TaskID(id))
	_, err := s.client.Enqueue(ctx, p.Task, opts...)
	if errors.Is(err, queue.ErrDuplicateTaskID) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue tick %v: %w", t, err)
	}
	s.log.Debug("enqueued scheduled task", "schedule", p.Name, "tick", t, "id", id)
	return nil
}

// mark records p's last tick (when last is set) and its next, for inspectors.
func (s *scheduler) mark(ctx context.Context, p *scheduled, last time.Time) error {
	info := queue.ScheduleInfo{Spec: p.Spec, Queue: p.queue, Type: p.Task.Type(), Missed: missedPolicy(p.RunMissed)}
	if next := p.next(p.cursor); !next.IsZero() {
		info.Next = next.UnixMilli()
	}
	if !last.IsZero() {
		info.Last = last.UnixMilli()
	}
	b, _ := json.Marshal(info)
	return script.CronMark.Run(ctx, s.rdb, []string{keys.Cron(s.prefix)}, p.Name, string(b)).Err()
}
