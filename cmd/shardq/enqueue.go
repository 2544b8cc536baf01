package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/queue"
)

// enqueueCommand enqueues a task from the command line, or one task per
// line of its input with --lines:
//
//	shardq enqueue --queue email --type email:send --json --payload '{"to": "ann@example.com"}'
//	generate-jobs | shardq enqueue --type resize --lines
//
// It prints each task's ID and state ("01J... pending"). Exit codes: 0
// when every task was enqueued; 1 for Redis errors and rejected tasks
// (a duplicate task ID or unique task, a queue at its MaxDepth: the
// message names it), and with
// --lines for any rejected line (the others are enqueued); 2 for bad flags
// or input (no type, a bad queue name, invalid JSON with --json).
type enqueueCommand struct{}

func (*enqueueCommand) name() string { return "enqueue" }
func (*enqueueCommand) summary() string {
	return "enqueue a task from the command line or stdin, or one task per line with --lines"
}

const enqueueDetails = `
The payload is --payload, else the whole of stdin (or --file), stored as it
is (a raw payload). With --json it must be one JSON value; Go handlers decode
it with worker.Typed or Task.Decode as encoding/json does (json tags, untagged
fields by name, any case), and an object none of whose keys fits the target
struct is an error, never a handler called with empty fields.

--lines enqueues one task per line of stdin (or --file), skipping empty lines,
in batches of up to 500 per Redis round trip; each task's options are the
flags'. Rejected lines are reported on stderr, the others enqueued.

A queue at its MaxDepth (queue.Limits) refuses tasks; --wait waits up to
that long for room (workers draining it) before giving up.

Prints "ID STATE" for every task enqueued (STATE is pending or scheduled).`

const enqueueExitCodes = `Exit codes:
  0  every task enqueued
  1  a Redis error, or a task rejected (duplicate --id or --unique task,
     the queue full at its MaxDepth, after --wait);
     with --lines, any line rejected (invalid JSON with --json, a duplicate):
     each is reported on stderr and the other lines are enqueued
  2  bad flags or input (no --type, a bad queue name, invalid JSON with --json)`

// maxPayload is queue.Config.MaxPayloadSize's default, which this command uses.
const maxPayload = 1 << 20

type enqueueFlags struct {
	redisURL string
	prefix   string
	queue    string
	typ      string
	payload  string
	file     string
	json     bool
	delay    time.Duration
	maxRetry int
	id       string
	unique   time.Duration
	timeout  time.Duration
	lines    bool
	wait     time.Duration
	store    storeFlags
	task     taskFlags
}

func (c *enqueueCommand) run(ctx context.Context, m *Main, args []string) error {
	var f enqueueFlags
	fs := m.flagSet(c)
	fs.StringVar(&f.redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&f.prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	fs.StringVar(&f.queue, "queue", queue.DefaultQueue, "the queue")
	fs.StringVar(&f.typ, "type", "", "the task type, which picks the handler (required)")
	fs.StringVar(&f.payload, "payload", "", "the payload (default: read stdin)")
	fs.StringVar(&f.file, "file", "", "read the payload (or the lines) from `file` instead of stdin")
	fs.BoolVar(&f.json, "json", false, "the payload is JSON: check it, for worker.Typed handlers that decode it by json tags")
	fs.DurationVar(&f.delay, "delay", 0, "run the task after this long")
	fs.IntVar(&f.maxRetry, "max-retry", config.DefaultMaxRetry, "retries after a failed attempt before the task is dead")
	fs.StringVar(&f.id, "id", "", "the task's ID (default: a new one); an ID enqueued before is rejected")
	fs.DurationVar(&f.unique, "unique", 0, "reject the task while one with the same type and payload is queued, for this `ttl`")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound each attempt (0: no bound)")
	fs.BoolVar(&f.lines, "lines", false, "one task per line of stdin (or --file)")
	fs.DurationVar(&f.wait, "wait", 0, "when the queue is full (its MaxDepth), wait up to this `long` for room")
	f.task.add(fs)
	f.store.add(fs, true, false)
	describe(fs, c, "--type TYPE [flags]", enqueueDetails, enqueueExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	set := visited(fs)
	opts, err := f.options(set)
	if err != nil {
		return err
	}
	e := &enqueuer{m: m, f: f, opts: opts}
	if f.lines {
		return e.lines(ctx)
	}
	return e.one(ctx, set["payload"])
}

// options checks the flags and turns them into task options.
func (f *enqueueFlags) options(set map[string]bool) ([]queue.Option, error) {
	switch {
	case f.typ == "":
		return nil, usageErr("--type is required")
	case set["payload"] && (f.lines || f.file != ""):
		return nil, usageErr("--payload is the payload: it cannot be used with --lines or --file")
	case f.lines && f.id != "":
		return nil, usageErr("--id names one task: it cannot be used with --lines")
	case f.delay < 0 || f.unique < 0 || f.timeout < 0 || f.wait < 0:
		return nil, usageErr("--delay, --unique, --timeout and --wait cannot be negative")
	case set["delay"] && set["at"]:
		return nil, usageErr("--delay and --at both say when the task runs: pass one")
	case f.unique > 0 && set["unique-until-finished"] && !set["unique-by"]:
		return nil, usageErr("--unique holds the lock for a time and --unique-until-finished until the task finishes: pass one")
	}
	if err := config.CheckName(f.prefix); err != nil {
		return nil, fmt.Errorf("%w: --prefix: %v", errUsage, err)
	}
	opts := []queue.Option{queue.In(f.queue), queue.MaxRetry(f.maxRetry)}
	if f.delay > 0 {
		opts = append(opts, queue.ProcessIn(f.delay))
	}
	if f.id != "" {
		opts = append(opts, queue.TaskID(f.id))
	}
	if f.unique > 0 && f.task.uniqueBy == "" {
		opts = append(opts, queue.Unique(f.unique))
	}
	if f.timeout > 0 {
		opts = append(opts, queue.Timeout(f.timeout))
	}
	if f.wait > 0 {
		opts = append(opts, queue.WaitForRoom())
	}
	more, err := f.task.options(set, f.unique)
	if err != nil {
		return nil, err
	}
	opts = append(opts, more...)
	if _, err := config.QueueOf(queue.NewRawTask(f.typ, nil), opts); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return opts, nil
}

type enqueuer struct {
	m    *Main
	f    enqueueFlags
	opts []queue.Option
}

// input opens --file, else stdin (refusing a terminal: it would wait for
// a payload nobody types).
func (e *enqueuer) input() (io.ReadCloser, error) {
	if e.f.file != "" {
		f, err := os.Open(e.f.file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		return f, nil
	}
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return nil, usageErr("no payload: pass --payload, --file, or pipe it on stdin")
	}
	return io.NopCloser(os.Stdin), nil
}

// task builds the task of one payload.
func (e *enqueuer) task(payload []byte) (*queue.Task, error) {
	if e.f.json {
		// stored as sent: worker.Typed and Task.Decode read a raw payload
		// as encoding/json does, by json tags
		if err := checkJSON(payload); err != nil {
			return nil, err
		}
	}
	return queue.NewRawTask(e.f.typ, payload), nil
}

func (e *enqueuer) one(ctx context.Context, fromFlag bool) error {
	payload := []byte(e.f.payload)
	if !fromFlag {
		in, err := e.input()
		if err != nil {
			return err
		}
		defer in.Close()
		if payload, err = io.ReadAll(io.LimitReader(in, maxPayload+1)); err != nil {
			return fmt.Errorf("read the payload: %w", err)
		}
		if len(payload) > maxPayload {
			return usageErr("the payload is over %d bytes", maxPayload)
		}
	}
	task, err := e.task(payload)
	if err != nil {
		return fmt.Errorf("%w: --payload: %v", errUsage, err)
	}
	client, closeRedis, err := e.client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	wctx, cancel := e.waitContext(ctx)
	defer cancel()
	info, err := client.Enqueue(wctx, task, e.opts...)
	if err != nil {
		if errors.Is(err, queue.ErrDuplicateTaskID) && info != nil && info.State != "" {
			return fmt.Errorf("%w; that task is %s", e.explain(err), info.State)
		}
		return e.explain(err)
	}
	fmt.Fprintf(e.m.Stdout, "%s %s\n", info.ID, info.State)
	return nil
}

func (e *enqueuer) client(ctx context.Context) (*queue.Client, func(), error) {
	rdb, closeRedis, err := e.m.connect(ctx, e.f.redisURL, false, e.m.Stderr)
	if err != nil {
		return nil, nil, err
	}
	// as workers do at start: tasks enqueued into an evicting Redis can
	// vanish before any worker sees them
	if p := rcall.Evicting(ctx, rdb); p != "" {
		fmt.Fprintf(e.m.Stderr, "warning: Redis maxmemory-policy is %s, not noeviction: under memory pressure Redis may evict tasks\n", p)
	}
	cfg := queue.Config{Prefix: e.f.prefix}
	if err := e.f.store.apply(e.m, &cfg); err != nil {
		closeRedis()
		return nil, nil, err
	}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		closeRedis()
		return nil, nil, err
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err == nil {
		err = warnPrefix(ctx, e.m, rdb, insp, cfg.Prefix, "this task starts its first queue")
	}
	if err != nil {
		closeRedis()
		return nil, nil, err
	}
	return client, closeRedis, nil
}

// explain turns a rejected task into a message that names what collided;
// bad input is a usage error.
func (e *enqueuer) explain(err error) error {
	switch {
	case errors.Is(err, queue.ErrDuplicateTaskID):
		return fmt.Errorf("not enqueued: task ID %q was already enqueued to queue %q (IDs stay claimed for 24h)", e.f.id, e.f.queue)
	case errors.Is(err, queue.ErrDuplicateUniqueTask):
		return fmt.Errorf("not enqueued: %s", e.duplicate())
	case errors.Is(err, queue.ErrQueueFull):
		return fmt.Errorf("not enqueued: %s", e.full())
	case e.f.wait > 0 && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errWaitedForRoom)):
		// the cause of --wait's context, or the deadline a connection
		// met first: either way a try was cut off midway
		return fmt.Errorf("%s; --wait ended a try midway, so the task may be enqueued after all", e.full())
	case errors.Is(err, queue.ErrInvalid):
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return err
}

// duplicate says what a task refused as a duplicate collided with: a
// task of the same uniqueness ID, or of the same type and payload, and
// for how long the flags hold the lock.
func (e *enqueuer) duplicate() string {
	what := fmt.Sprintf("a %q task with the same payload", e.f.typ)
	if e.f.task.uniqueBy != "" {
		what = fmt.Sprintf("a task of uniqueness ID %q", e.f.task.uniqueBy)
	}
	held := fmt.Sprintf("--unique %v", e.f.unique)
	if e.f.unique == 0 {
		held = fmt.Sprintf("--unique-until-finished %v", e.f.task.untilFinished)
	}
	return fmt.Sprintf("%s is already in queue %q (%s)", what, e.f.queue, held)
}

// waitContext bounds a WaitForRoom enqueue by --wait.
func (e *enqueuer) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.f.wait <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, e.f.wait, errWaitedForRoom)
}

// errWaitedForRoom is the cause of a --wait that ran out.
var errWaitedForRoom = errors.New("--wait ran out")

// full says that the queue is at its MaxDepth, and what to do.
func (e *enqueuer) full() string {
	if e.f.wait > 0 {
		return fmt.Sprintf("queue %q is full (at its MaxDepth) and no room came within --wait %v", e.f.queue, e.f.wait)
	}
	return fmt.Sprintf("queue %q is full (at its MaxDepth): retry later, pass --wait to wait for room, or raise its limit", e.f.queue)
}
