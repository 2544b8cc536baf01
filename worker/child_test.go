package worker

// The child worker program, and the parent's side of it. The crash and
// fault tests start this test binary again (TestMain sees childEnv) as a
// worker process configured from the environment, so they can kill, stop
// and continue it with real signals. The child's handler records what it
// does in Redis under the test's prefix (see recKeys), which survives the
// child; its log is JSON on stderr, which the parent reads.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/serve"
	"github.com/shardq/shardq/internal/wait"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// childEnv, when set, makes the test binary run childMain instead of the tests.
const childEnv = "SHARDQ_TEST_CHILD"

// The child's configuration, one environment variable each.
const (
	envAddr        = "SHARDQ_CHILD_ADDR"        // Redis address; on a cluster, its nodes' addresses, comma-separated
	envPartitions  = "SHARDQ_CHILD_PARTITIONS"  // the queue's partitions (queue.Config.Partitions); 0 = 1
	envPrefix      = "SHARDQ_CHILD_PREFIX"      // key prefix (queue.Config.Prefix and the records)
	envQueue       = "SHARDQ_CHILD_QUEUE"       // the one queue it runs
	envID          = "SHARDQ_CHILD_ID"          // worker ID
	envConcurrency = "SHARDQ_CHILD_CONCURRENCY" // handlers at once
	envLease       = "SHARDQ_CHILD_LEASE"       // Config.Lease
	envHeartbeat   = "SHARDQ_CHILD_HEARTBEAT"   // Config.Heartbeat
	envSleep       = "SHARDQ_CHILD_SLEEP"       // handler's sleep between start and completion
	envCrash       = "SHARDQ_CHILD_CRASH"       // crash point, "" = none
	envCrashAt     = "SHARDQ_CHILD_CRASH_AT"    // die at the Nth occurrence of the crash point
	envHandler     = "SHARDQ_CHILD_HANDLER"     // handler behaviour
	envMaxRetries  = "SHARDQ_CHILD_MAX_RETRIES" // go-redis MaxRetries; 0 = its default, -1 = none
	envSchedule    = "SHARDQ_CHILD_SCHEDULE"    // "" or "spec|missed": a schedule named "tick" enqueueing onto Queue+"-cron"
	envCluster     = "SHARDQ_CHILD_CLUSTER"     // "true": Addr lists the nodes of a Redis Cluster
)

// Crash points: the child SIGKILLs itself at the Nth occurrence of one.
const (
	crashAfterMove  = "after-move"  // a blocking move put a task in flight; no claim yet
	crashAfterClaim = "after-claim" // tasks leased; no handler started for them
	crashMidHandler = "mid-handler" // inside a handler, after it recorded its start
	crashBeforeAck  = "before-ack"  // a handler returned nil; its ack is not written
	crashWithAhead  = "with-ahead"  // a pop leased tasks ahead of the free slots; none of them started
	// a flow task's ack or death is written, not forwarded to its flow
	crashAfterFlowOutcome = "after-flow-outcome"
	// notifications were forwarded and made callbacks or next links due;
	// they are not delivered
	crashBeforeFlowDeliver = "before-flow-deliver"
)

// Handler behaviours.
const (
	// handleRecord records the start, sleeps, records the completion and
	// returns nil.
	handleRecord = "record"
	// handleWaitLease records the start, waits for its context to end (15s
	// at most), records context.Cause and returns nil: a late "success".
	handleWaitLease = "wait-lease"
	// handleGated records the start, waits until the parent opens the
	// task's gate (recKeys.gate, 15s at most), then completes as record does.
	handleGated = "gated"
	// handleGauge records the task in recKeys.running (task -> pid) and
	// raises recKeys.peak to the number running, sleeps, then removes it
	// and completes as record does: the parent sees concurrency across
	// processes.
	handleGauge = "gauge"
	// handleFlow returns nil at once for batch members, except that a
	// member of type "member-last" first waits (15s at most) until the
	// parent sets recKeys.gate("closed"), and records the start and
	// completion (as record does) of tasks whose type begins with "cb": a
	// batch's callbacks, counted in every process.
	handleFlow = "flow"
	// handleOrder records the start, and appends the task's payload to
	// recKeys.order in the same transaction, then completes as record
	// does: the parent sees the order tasks started in.
	handleOrder = "order"
	// handleProgress reports 40% ("working"); on a task's first attempt
	// it then dies (SIGKILL), on later ones it writes a result naming the
	// attempt and returns nil.
	handleProgress = "progress"
	// handleSteps runs the steps "one", "two" and "three" (worker.Step),
	// each appending "<step>@<attempt>" to recKeys.stepRuns when its
	// function runs. On a task's first attempt it dies (SIGKILL) after
	// step two; on later ones it writes the three values as its result.
	handleSteps = "steps"
	// handleNone gives the server no handler and no queue: the child only
	// runs its Schedule.
	handleNone = "none"
)

// gaugeScript adds a running task and keeps the peak of all running at once.
var gaugeScript = redis.NewScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local n = redis.call('HLEN', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or 0) then redis.call('SET', KEYS[2], n) end
return n`)

// childOpts configures a child worker process.
type childOpts struct {
	Addr, Prefix, Queue, ID string
	Concurrency             int
	Lease, Heartbeat, Sleep time.Duration
	Crash                   string
	CrashAt                 int
	Handler                 string
	MaxRetries              int
	Schedule                string
	// Partitions is the queue's partition count; 0 means 1. With more
	// than one, Addr is a cluster's node list (see clusterKind).
	Partitions int
	// Cluster: Addr lists a cluster's nodes, comma-separated.
	Cluster bool
}

func (o childOpts) env() []string {
	return []string{
		childEnv + "=1",
		envAddr + "=" + o.Addr,
		envPrefix + "=" + o.Prefix,
		envQueue + "=" + o.Queue,
		envID + "=" + o.ID,
		envConcurrency + "=" + strconv.Itoa(o.Concurrency),
		envLease + "=" + o.Lease.String(),
		envHeartbeat + "=" + o.Heartbeat.String(),
		envSleep + "=" + o.Sleep.String(),
		envCrash + "=" + o.Crash,
		envCrashAt + "=" + strconv.Itoa(o.CrashAt),
		envHandler + "=" + o.Handler,
		envMaxRetries + "=" + strconv.Itoa(o.MaxRetries),
		envSchedule + "=" + o.Schedule,
		envPartitions + "=" + strconv.Itoa(o.Partitions),
		envCluster + "=" + strconv.FormatBool(o.Cluster),
	}
}

func childOptsFromEnv() (childOpts, error) {
	o := childOpts{
		Addr: os.Getenv(envAddr), Prefix: os.Getenv(envPrefix), Queue: os.Getenv(envQueue),
		ID: os.Getenv(envID), Crash: os.Getenv(envCrash), Handler: os.Getenv(envHandler),
		Schedule: os.Getenv(envSchedule),
	}
	var errs []error
	num := func(name string) int {
		v := os.Getenv(name)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		errs = append(errs, err)
		return n
	}
	dur := func(name string) time.Duration {
		v := os.Getenv(name)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		errs = append(errs, err)
		return d
	}
	o.Concurrency, o.CrashAt, o.MaxRetries = num(envConcurrency), num(envCrashAt), num(envMaxRetries)
	o.Partitions = num(envPartitions)
	o.Cluster = os.Getenv(envCluster) == "true"
	o.Lease, o.Heartbeat, o.Sleep = dur(envLease), dur(envHeartbeat), dur(envSleep)
	if o.Addr == "" || o.Prefix == "" || o.Queue == "" || o.ID == "" {
		errs = append(errs, fmt.Errorf("%s, %s, %s and %s are required", envAddr, envPrefix, envQueue, envID))
	}
	switch o.Crash {
	case "", crashAfterMove, crashAfterClaim, crashMidHandler, crashBeforeAck, crashWithAhead, crashAfterFlowOutcome, crashBeforeFlowDeliver:
	default:
		errs = append(errs, fmt.Errorf("unknown crash point %q", o.Crash))
	}
	if o.Crash != "" && o.CrashAt < 1 {
		errs = append(errs, fmt.Errorf("crash point %q needs %s >= 1", o.Crash, envCrashAt))
	}
	switch o.Handler {
	case "":
		o.Handler = handleRecord
	case handleRecord, handleWaitLease, handleGated, handleGauge, handleProgress, handleFlow, handleOrder, handleSteps:
	case handleNone:
		if o.Schedule == "" {
			errs = append(errs, fmt.Errorf("handler %q needs a schedule", o.Handler))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown handler %q", o.Handler))
	}
	return o, errors.Join(errs...)
}

// recKeys names what child handlers record in Redis, under the test's
// prefix (outside every queue partition's keys), in one cluster slot.
type recKeys struct{ p string }

// recKeysFor returns the record keys of the test with prefix: one hash
// tag, so a transaction or script over them works on a cluster too.
func recKeysFor(prefix string) recKeys { return recKeys{"{" + prefix + ":rec}"} }

// client returns the child's Redis client: one server, or a cluster.
func (o childOpts) client() redis.UniversalClient {
	if o.Cluster {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(o.Addr, ","), MaxRetries: o.MaxRetries})
		cc.AddHook(rcall.RerouteHook{Client: cc})
		return cc
	}
	return redis.NewClient(&redis.Options{Addr: o.Addr, MaxRetries: o.MaxRetries})
}

// started is the set of task IDs whose handler started in process pid.
func (k recKeys) started(pid int) string { return k.p + ":started:" + strconv.Itoa(pid) }

// starts is the hash task ID -> handler starts, in every process.
func (k recKeys) starts() string { return k.p + ":starts" }

// completions is the hash task ID -> handlers that finished successfully.
func (k recKeys) completions() string { return k.p + ":completions" }

// completedBy is the hash task ID -> pid of its last successful handler.
func (k recKeys) completedBy() string { return k.p + ":completedby" }

// done is the set of task IDs whose handler finished successfully in pid.
func (k recKeys) done(pid int) string { return k.p + ":done:" + strconv.Itoa(pid) }

// held is the set of task IDs pid held (in flight, or leased to it) when
// it killed itself after a move or a claim.
func (k recKeys) held(pid int) string { return k.p + ":held:" + strconv.Itoa(pid) }

// crashTask is the ID of the task whose handler pid died in (mid-handler).
func (k recKeys) crashTask(pid int) string { return k.p + ":crashtask:" + strconv.Itoa(pid) }

// cause is the hash task ID -> context.Cause a wait-lease handler saw.
func (k recKeys) cause() string { return k.p + ":cause" }

// gate is the list a gated handler of task id waits on (BLPOP).
func (k recKeys) gate(id string) string { return k.p + ":gate:" + id }

// running holds task -> pid of the handlers running now (handleGauge).
func (k recKeys) running() string { return k.p + ":running" }

// order is the list of the payloads of the tasks handleOrder started, in
// the order they started.
func (k recKeys) order() string { return k.p + ":order" }

// peak is the most handlers handleGauge saw running at once.
func (k recKeys) stepRuns() string { return k.p + ":stepruns" }

func (k recKeys) peak() string { return k.p + ":peak" }

// ready holds the pid of the child running as worker id, once it started.
func (k recKeys) ready(id string) string { return k.p + ":ready:" + id }

// childWorker is the state of the child program.
type childWorker struct {
	o     childOpts
	rdb   redis.UniversalClient
	k     recKeys
	parts []keys.Partition
	pid   int
	log   *slog.Logger
	hits  atomic.Int64 // occurrences of the crash point so far
}

// childMain runs the child worker until SIGTERM, then shuts it down
// gracefully. It returns the process exit code: 0 after a clean shutdown.
func childMain() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o, err := childOptsFromEnv()
	if err != nil {
		log.Error("child: bad configuration", "err", err)
		return 2
	}
	rdb := o.client()
	defer rdb.Close()
	c := &childWorker{o: o, rdb: rdb, k: recKeysFor(o.Prefix), pid: os.Getpid(), log: log}
	for i := range max(o.Partitions, 1) {
		c.parts = append(c.parts, keys.For(o.Prefix, o.Queue, i))
	}
	cfg := Config{
		Config:          queue.Config{Prefix: o.Prefix, Logger: log, Partitions: map[string]int{o.Queue: max(o.Partitions, 1)}},
		Queues:          map[string]int{o.Queue: 1},
		Concurrency:     o.Concurrency,
		Lease:           o.Lease,
		Heartbeat:       o.Heartbeat,
		ShutdownTimeout: 5 * time.Second,
		WorkerID:        o.ID,
		Schedules:       childSchedules(o),
	}
	var h Handler = HandlerFunc(c.handle)
	if o.Handler == handleNone {
		cfg.Queues, h = nil, nil
	}
	s, err := NewServer(rdb, cfg, h)
	if err != nil {
		log.Error("child: NewServer", "err", err)
		return 2
	}
	switch o.Crash {
	case crashAfterMove:
		setProbe(s, &serve.ProbeFuncs{OnAfterMove: func() {
			if c.hit() {
				c.recordHeld(c.inflight)
				c.die()
			}
		}})
	case crashAfterClaim:
		setProbe(s, &serve.ProbeFuncs{OnAfterClaim: func() {
			if c.hit() {
				c.recordHeld(c.leased)
				c.die()
			}
		}})
	case crashWithAhead:
		setProbe(s, &serve.ProbeFuncs{OnLeasedAhead: func(int) {
			if c.hit() {
				c.recordHeld(func(context.Context) ([]string, error) { return s.engine.LeasedAhead(), nil })
				c.die()
			}
		}})
	case crashBeforeAck:
		setProbe(s, &serve.ProbeFuncs{OnBeforeAck: func() {
			if c.hit() {
				c.die()
			}
		}})
	case crashAfterFlowOutcome:
		setProbe(s, &serve.ProbeFuncs{OnAfterFlowOutcome: func() {
			if c.hit() {
				c.die()
			}
		}})
	case crashBeforeFlowDeliver:
		setProbe(s, &serve.ProbeFuncs{OnBeforeFlowDeliver: func() {
			if c.hit() {
				c.die()
			}
		}})
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err = s.Start(startCtx)
	cancel()
	if err != nil {
		log.Error("child: start", "err", err)
		return 2
	}
	if err := c.retry(ctx, func(ctx context.Context) error {
		return rdb.Set(ctx, c.k.ready(o.ID), c.pid, 0).Err()
	}); err != nil {
		log.Error("child: could not announce readiness", "err", err)
	}
	<-ctx.Done()
	log.Info("child: signalled, shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		log.Error("child: shutdown", "err", err)
		return 1
	}
	log.Info("child: stopped cleanly")
	return 0
}

// hit counts one occurrence of the crash point and reports whether it is
// the one to die at.
func (c *childWorker) hit() bool { return c.hits.Add(1) == int64(c.o.CrashAt) }

// die kills this process as a crash would: SIGKILL, no deferred calls, no
// shutdown, nothing written after.
func (c *childWorker) die() {
	c.log.Info("child: crashing", "point", c.o.Crash, "occurrence", c.o.CrashAt)
	_ = syscall.Kill(c.pid, syscall.SIGKILL)
	select {}
}

// recordHeld records the IDs list returns in held(pid), before a crash.
func (c *childWorker) recordHeld(list func(context.Context) ([]string, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, err := list(ctx)
	if err == nil && len(ids) > 0 {
		err = c.rdb.SAdd(ctx, c.k.held(c.pid), ids).Err()
	}
	if err != nil {
		c.log.Error("child: could not record held tasks", "err", err)
	}
}

// inflight lists the tasks in this worker's in-flight lists.
func (c *childWorker) inflight(ctx context.Context) ([]string, error) {
	var items []string
	for _, part := range c.parts {
		its, err := c.rdb.LRange(ctx, part.Inflight(c.o.ID), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		items = append(items, its...)
	}
	var ids []string
	for _, it := range items {
		if it == script.Dummy {
			continue
		}
		m, err := wire.DecodeMessage([]byte(it))
		if err != nil {
			return nil, err
		}
		ids = append(ids, wire.PublicID(m.ID))
	}
	return ids, nil
}

// leased lists the tasks leased to this worker.
func (c *childWorker) leased(ctx context.Context) ([]string, error) {
	recs := map[string]string{}
	for _, part := range c.parts {
		m, err := c.rdb.HGetAll(ctx, part.State()).Result()
		if err != nil {
			return nil, err
		}
		maps.Copy(recs, m)
	}
	var ids []string
	for id, raw := range recs {
		r, err := wire.DecodeRecord([]byte(raw))
		if err != nil {
			return nil, err
		}
		if r.State == "active" && r.Worker == c.o.ID {
			ids = append(ids, wire.PublicID(id))
		}
	}
	return ids, nil
}

// waitFlowGate waits until the parent sets recKeys.gate("closed"), 15s at
// most: the batch's last member then cannot finish before the batch is
// closed, however fast the others run, so a worker's forward (not Close)
// makes the callbacks due. A string key rather than the gated list, since
// a killed worker's run of the member comes back and must see it again.
func (c *childWorker) waitFlowGate(ctx context.Context) error {
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); {
		n, err := c.rdb.Exists(ctx, c.k.gate("closed")).Result()
		if err == nil && n == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("flow gate not opened within 15s")
}

// handle is the child's handler.
func (c *childWorker) handle(ctx context.Context, t *Task) error {
	if c.o.Handler == handleFlow && !strings.HasPrefix(t.Type, "cb") {
		if t.Type == "member-last" {
			return c.waitFlowGate(ctx)
		}
		return nil
	}
	err := c.retry(ctx, func(ctx context.Context) error {
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, c.k.started(c.pid), t.ID)
			p.HIncrBy(ctx, c.k.starts(), t.ID, 1)
			if c.o.Handler == handleOrder {
				p.RPush(ctx, c.k.order(), string(t.Payload))
			}
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	if c.o.Crash == crashMidHandler && c.hit() {
		_ = c.retry(context.Background(), func(ctx context.Context) error {
			return c.rdb.Set(ctx, c.k.crashTask(c.pid), t.ID, 0).Err()
		})
		c.die()
	}
	if c.o.Handler == handleSteps {
		return c.handleSteps(ctx, t)
	}
	if c.o.Handler == handleProgress {
		if err := t.SetProgress(ctx, 40, "working"); err != nil {
			return err
		}
		if t.Attempt == 1 {
			c.die()
		}
		return t.SetResult(ctx, []byte(fmt.Sprintf("result of attempt %d", t.Attempt)))
	}
	if c.o.Handler == handleWaitLease {
		cause := "none: the context did not end within 15s"
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx).Error()
		case <-time.After(15 * time.Second):
		}
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.retry(rctx, func(ctx context.Context) error {
			return c.rdb.HSet(ctx, c.k.cause(), t.ID, cause).Err()
		})
		c.log.Info("child: late success", "task", t.ID, "cause", cause)
		return nil
	}
	if c.o.Handler == handleGated {
		if err := c.rdb.BLPop(ctx, 15*time.Second, c.k.gate(t.ID)).Err(); err != nil {
			return fmt.Errorf("gate of task %s: %w", t.ID, err)
		}
	}
	if c.o.Handler == handleGauge {
		if err := c.retry(ctx, func(ctx context.Context) error {
			return gaugeScript.Run(ctx, c.rdb, []string{c.k.running(), c.k.peak()}, t.ID, c.pid).Err()
		}); err != nil {
			return err
		}
		defer func() {
			_ = c.retry(context.WithoutCancel(ctx), func(ctx context.Context) error {
				return c.rdb.HDel(ctx, c.k.running(), t.ID).Err()
			})
		}()
	}
	if c.o.Sleep > 0 {
		wait.Sleep(ctx, c.o.Sleep)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return c.retry(ctx, func(ctx context.Context) error {
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, c.k.completions(), t.ID, 1)
			p.HSet(ctx, c.k.completedBy(), t.ID, c.pid)
			p.SAdd(ctx, c.k.done(c.pid), t.ID)
			return nil
		})
		return err
	})
}

// retry runs f until it succeeds or ctx ends (Redis may be restarting).
func (c *childWorker) retry(ctx context.Context, f func(context.Context) error) error {
	for {
		err := f(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		c.log.Warn("child: recording failed; retrying", "err", err)
		wait.Sleep(ctx, 50*time.Millisecond)
	}
}

// --- the parent's side ---

// child is a child worker process started by a test.
type child struct {
	name string
	opts childOpts
	cmd  *exec.Cmd
	pid  int
	out  *childOutput
	done chan struct{} // closed once the process exited and was reaped
}

var childSeq atomic.Int64

// startChild starts a child worker with o (Addr, Prefix and Queue from the
// caller; ID is filled in). It dies with the test binary (Pdeathsig) and is
// killed at the end of the test; when the test failed, its output is logged.
func startChild(t *testing.T, name string, o childOpts) *child {
	t.Helper()
	o.ID = fmt.Sprintf("%s-%d", name, childSeq.Add(1))
	o.Concurrency = max(o.Concurrency, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), o.env()...)
	out := &childOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", name, err)
	}
	c := &child{name: name, opts: o, cmd: cmd, pid: cmd.Process.Pid, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		if !c.exited() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-c.done
		}
		if t.Failed() {
			t.Logf("child %s (pid %d, %s) output, last lines:\n%s", name, c.pid, c.state(), c.tail(60))
		}
	})
	return c
}

// waitReady waits until the child's worker has started.
func (c *child) waitReady(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	key := recKeysFor(c.opts.Prefix).ready(c.opts.ID)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if pid, err := rdb.Get(context.Background(), key).Int(); err == nil && pid == c.pid {
			return
		}
		if c.exited() {
			t.Fatalf("child %s exited before it was ready (%s):\n%s", c.name, c.state(), c.tail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %s not ready after 20s:\n%s", c.name, c.tail(40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("child %s: send %v: %v", c.name, sig, err)
	}
}

// exited reports whether the process is gone.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to d for the process to exit and reports whether it did.
func (c *child) waitExit(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

// killedBySIGKILL reports whether the process exited by SIGKILL.
func (c *child) killedBySIGKILL() bool {
	if !c.exited() {
		return false
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// state describes the process for messages.
func (c *child) state() string {
	if !c.exited() {
		return "running"
	}
	return c.cmd.ProcessState.String()
}

// stop sends SIGTERM (and SIGCONT, should it be stopped) and expects a
// graceful shutdown: exit code 0 within 25s.
func (c *child) stop(t *testing.T) {
	t.Helper()
	if c.exited() {
		t.Errorf("child %s already gone (%s), want it alive until now", c.name, c.state())
		return
	}
	c.signal(t, syscall.SIGTERM)
	c.signal(t, syscall.SIGCONT)
	if !c.waitExit(25 * time.Second) {
		t.Errorf("child %s did not exit within 25s of SIGTERM", c.name)
		return
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("child %s exited with %s after SIGTERM, want exit code 0 (a clean shutdown; 66 = data race)", c.name, c.state())
	}
}

// tail returns the last n lines of the child's output.
func (c *child) tail(n int) string {
	lines := strings.Split(strings.TrimRight(c.out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logs returns the child's JSON log entries (other output is skipped).
func (c *child) logs() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(c.out.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// logged returns the child's log entries at level whose message starts
// with msg and whose attributes include attrs.
func (c *child) logged(level, msg string, attrs map[string]string) []map[string]any {
	var out []map[string]any
next:
	for _, e := range c.logs() {
		m, _ := e["msg"].(string)
		if e["level"] != level || !strings.HasPrefix(m, msg) {
			continue
		}
		for k, v := range attrs {
			if fmt.Sprint(e[k]) != v {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// childOutput collects a child's output: one writer, concurrent readers.
type childOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *childOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *childOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// --- reading the records ---

// hashInts reads a hash of counters.
func hashInts(t *testing.T, rdb redis.UniversalClient, key string) map[string]int {
	t.Helper()
	raw, err := rdb.HGetAll(context.Background(), key).Result()
	must(t, err)
	out := make(map[string]int, len(raw))
	for k, v := range raw {
		n, err := strconv.Atoi(v)
		must(t, err)
		out[k] = n
	}
	return out
}

// members reads a set.
func members(t *testing.T, rdb redis.UniversalClient, key string) map[string]bool {
	t.Helper()
	ids, err := rdb.SMembers(context.Background(), key).Result()
	must(t, err)
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// childSchedules returns the child's schedule: "tick", enqueueing onto
// Queue+"-cron" (which no child runs, so the parent counts the ticks).
func childSchedules(o childOpts) []Schedule {
	spec, missed, ok := strings.Cut(o.Schedule, "|")
	if !ok {
		return nil
	}
	sc := Schedule{Name: "tick", Spec: spec, Task: queue.NewRawTask("tick", nil), Options: []queue.Option{queue.In(o.Queue + "-cron")}}
	sc.RunMissed = missed == missedPolicy(true)
	return []Schedule{sc}
}

// handleSteps is the steps handler (see handleSteps).
func (c *childWorker) handleSteps(ctx context.Context, t *Task) error {
	var vals []string
	for _, name := range []string{"one", "two", "three"} {
		if name == "three" && t.Attempt == 1 {
			c.die()
		}
		v, err := Step(ctx, name, func(ctx context.Context) (string, error) {
			if err := c.rdb.RPush(ctx, c.k.stepRuns(), fmt.Sprintf("%s@%d", name, t.Attempt)).Err(); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s of attempt %d", name, t.Attempt), nil
		})
		if err != nil {
			return err
		}
		vals = append(vals, v)
	}
	return t.SetResult(ctx, []byte(strings.Join(vals, ", ")))
}
