package upgrade_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// rollingTimeout bounds the rolling upgrade once the old programs are
// built: about 10s on two busy cores.
const rollingTimeout = 2 * time.Minute

// rollingQueue is the one queue every producer and worker of the rolling
// upgrade uses.
const rollingQueue = "rolling"

// refusedID is the TaskID of a task the new producer is refused: it must
// not be claimed, so the same ID is enqueued once the producer may.
const refusedID = "rolling-refused-1"

// sized are the payloads the new producer writes that 0.1.0 could not
// read, by the name the new worker records once it got them whole: one
// stored compressed, and one below CompressAbove, stored as it is, that
// shows the scan of Redis would find the first if it were not compressed.
var sized = map[string][]byte{
	"d-big":   []byte(strings.Repeat("a rolling upgrade keeps every task; ", 64)),
	"d-plain": []byte(strings.Repeat("a task below the threshold stays; ", 12)),
}

// pairing is a phase of the upgrade: which producer wrote for which
// workers, and what of it ran where.
type pairing struct {
	phase, what string
	payloads    []string
	allowed     string // "old", "new" or "" for either
}

// TestRollingUpgradeFrom010 upgrades a fleet from 0.1.0 on one Redis, as
// docs/operations.md tells operators to: workers first, then producers.
// a: a 0.1.0 producer and a 0.1.0 worker. b: a current worker joins while
// the 0.1.0 producer keeps enqueueing, and both run its tasks. c: a
// current producer is refused while the 0.1.0 worker runs, and writes
// nothing. d: the 0.1.0 worker stops on SIGTERM, and the current producer
// enqueues what 0.1.0 could not read (a group, a compressed payload) for
// the current worker. e: a 0.1.0 worker is killed with SIGKILL; the
// current producer is refused until a current worker with a short lease
// reaps it. Every task runs exactly once, on a worker that reads it.
func TestRollingUpgradeFrom010(t *testing.T) {
	t.Parallel()
	progs := programs(t, "0.1.0")
	ctx, cancel := context.WithTimeout(context.Background(), rollingTimeout)
	defer cancel()
	begin := time.Now()
	lap := func(phase string) {
		t.Logf("phase %s done at %v", phase, time.Since(begin).Round(time.Millisecond))
	}

	srv := redistest.Start(t)
	rdb := srv.Client(t)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	qcfg := queue.Config{Logger: logger}
	prefix := cmp.Or(qcfg.Prefix, config.DefaultPrefix)
	insp, err := queue.NewInspector(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	book := newLedger(filepath.Join(t.TempDir(), "runs"))
	var phases []pairing
	settle := func(p pairing) {
		t.Helper()
		phases = append(phases, p)
		book.waitFor(ctx, t, "phase "+p.phase+"'s tasks to run", func() bool {
			ran, _, _ := book.count(t, p.payloads)
			return ran == len(p.payloads)
		}, func() string { return "missing: " + strings.Join(missing(book.runs(t), p.payloads), " ") })
		book.waitFor(ctx, t, "the queue to be empty after phase "+p.phase,
			func() bool { return queueIdle(ctx, t, insp) },
			func() string { return fmt.Sprintf("queue %+v", queueInfo(ctx, t, insp)) })
		lap(p.phase)
	}
	hasStatus := func(id string) bool {
		ok, err := rdb.HExists(ctx, keys.WorkerStatus(prefix), id).Result()
		if err != nil {
			t.Fatalf("read the status of worker %s: %v", id, err)
		}
		return ok
	}

	// a: 0.1.0 only
	w1 := startOldWorker(ctx, t, progs.Worker, srv.Addr, rollingQueue, book.file)
	a := startFeeder(ctx, t, progs.Feeder, srv.Addr, rollingQueue, "a", 40).finish(ctx, t)
	settle(pairing{"a", "0.1.0 producer -> 0.1.0 worker", a, "old"})

	// b: a current worker joins the stream
	b := startFeeder(ctx, t, progs.Feeder, srv.Addr, rollingQueue, "b", 0)
	book.waitFor(ctx, t, "the 0.1.0 worker to run the stream's first tasks", func() bool {
		ran, _, _ := book.count(t, b.sent())
		return ran >= 5
	}, func() string { return fmt.Sprintf("%d enqueued", len(b.sent())) })
	stopNew := startNewWorker(ctx, t, srv, qcfg, book, worker.Config{})
	joined := len(b.sent())
	book.waitFor(ctx, t, "both workers to run the stream's tasks enqueued after the join", func() bool {
		_, byOld, byNew := book.count(t, b.sent()[joined:])
		return byOld >= 10 && byNew >= 10
	}, func() string {
		_, byOld, byNew := book.count(t, b.sent()[joined:])
		return fmt.Sprintf("of %d enqueued after the join, %d ran on the 0.1.0 worker, %d on the current one", len(b.sent())-joined, byOld, byNew)
	})
	settle(pairing{"b", "0.1.0 producer -> 0.1.0 + new worker", b.finish(ctx, t), ""})

	// c: the current producer is refused while the 0.1.0 worker runs
	book.waitFor(ctx, t, "the 0.1.0 worker's status", func() bool { return hasStatus(w1.id) }, func() string { return w1.id })
	client, err := queue.NewClient(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Enqueue(ctx, queue.NewRawTask("rolling", []byte("c-0"), queue.In(rollingQueue), queue.TaskID(refusedID)))
	checkRefusal(t, "Enqueue", err, w1)
	t.Logf("refused: %v", err)
	_, err = client.EnqueueMany(ctx, []*queue.Task{
		queue.NewRawTask("rolling", []byte("c-1")),
		queue.NewRawTask("rolling", []byte("c-2"), queue.Group("tenant-c")),
	}, queue.In(rollingQueue))
	checkRefusal(t, "EnqueueMany", err, w1)
	if !queueIdle(ctx, t, insp) {
		t.Fatalf("the queue holds tasks after the refusals: %+v", queueInfo(ctx, t, insp))
	}
	phases = append(phases, pairing{"c", "new producer, refused while the 0.1.0 worker runs", nil, ""})
	lap("c")

	// d: the 0.1.0 worker stops; the current producer writes what only
	// the current worker reads
	if err := w1.stop(ctx, t, syscall.SIGTERM); err != nil {
		t.Fatalf("the 0.1.0 worker %s after SIGTERM: %v, want a clean exit\n%s", w1.id, err, w1.stderr.String())
	}
	if hasStatus(w1.id) {
		t.Fatalf("the 0.1.0 worker %s stopped gracefully but left its status", w1.id)
	}
	var d []string
	enqueue := func(c *queue.Client, payload string, opts ...queue.Option) {
		t.Helper()
		opts = append([]queue.Option{queue.In(rollingQueue)}, opts...)
		if _, err := c.Enqueue(ctx, queue.NewRawTask("rolling", []byte(payload), opts...)); err != nil {
			t.Fatalf("enqueue %s: %v", payload, err)
		}
		d = append(d, payload)
	}
	enqueue(client, "d-0", queue.TaskID(refusedID)) // the refused call claimed nothing
	for i := 1; i < 10; i++ {
		enqueue(client, fmt.Sprint("d-", i))
	}
	for i := range 5 {
		enqueue(client, fmt.Sprint("d-g", i), queue.Group("tenant-d"))
	}
	checkSized(ctx, t, rdb, client, insp)
	d = append(d, "d-big", "d-plain")
	settle(pairing{"d", "new producer -> new worker", d, "new"})

	// e: a 0.1.0 worker crashes; a current worker with a short lease
	// reaps it, which a default-lease one would in 30s
	stopNew() // else the short lease would find its 10s heartbeats stale
	w2 := startOldWorker(ctx, t, progs.Worker, srv.Addr, rollingQueue, book.file)
	e1 := startFeeder(ctx, t, progs.Feeder, srv.Addr, rollingQueue, "e1", 20).finish(ctx, t)
	settle(pairing{"e1", "0.1.0 producer -> 0.1.0 worker, SIGKILLed after", e1, "old"})
	book.waitFor(ctx, t, "the second 0.1.0 worker's status", func() bool { return hasStatus(w2.id) }, func() string { return w2.id })
	if err := w2.stop(ctx, t, syscall.SIGKILL); err == nil {
		t.Fatalf("the 0.1.0 worker %s exited cleanly after SIGKILL", w2.id)
	}
	e2 := startFeeder(ctx, t, progs.Feeder, srv.Addr, rollingQueue, "e2", 10).finish(ctx, t)
	client2, err := queue.NewClient(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client2.Enqueue(ctx, queue.NewRawTask("rolling", []byte("e3-0"), queue.In(rollingQueue)))
	checkRefusal(t, "Enqueue after SIGKILL", err, w2)
	startNewWorker(ctx, t, srv, qcfg, book, worker.Config{Lease: 2 * time.Second, Heartbeat: 250 * time.Millisecond})
	book.waitFor(ctx, t, "the current worker to reap the killed 0.1.0 worker", func() bool { return !hasStatus(w2.id) }, func() string { return w2.id })
	d = nil
	for i := range 10 {
		enqueue(client2, fmt.Sprint("e3-", i))
	}
	enqueue(client2, "e3-g0", queue.Group("tenant-e"))
	settle(pairing{"e2", "0.1.0 producer, no worker -> new worker after the reap", e2, "new"})
	settle(pairing{"e3", "new producer, after the reap -> new worker", d, "new"})

	checkPairings(t, book, phases)
}

// checkPairings logs the table of enqueued and finished tasks per pairing
// and asserts each task ran exactly once, on a worker it was meant for,
// and nothing else ran.
func checkPairings(t *testing.T, book *ledger, phases []pairing) {
	t.Helper()
	runs := book.runs(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-5s %-56s %8s %8s %6s %6s %6s\n", "phase", "pairing", "enqueued", "finished", "runs", "0.1.0", "new")
	total := 0
	for _, p := range phases {
		ran, byOld, byNew := book.count(t, p.payloads)
		fmt.Fprintf(&table, "%-5s %-56s %8d %8d %6d %6d %6d\n", p.phase, p.what, len(p.payloads), ran, byOld+byNew, byOld, byNew)
		total += len(p.payloads)
		if ran != len(p.payloads) || byOld+byNew != len(p.payloads) {
			t.Errorf("phase %s: %d enqueued, %d finished in %d runs; want each to run exactly once", p.phase, len(p.payloads), ran, byOld+byNew)
		}
		for _, payload := range p.payloads {
			if who := runs[payload]; len(who) != 1 || (p.allowed != "" && who[0] != p.allowed) {
				t.Errorf("phase %s: task %s ran on %v, want once on %s", p.phase, payload, who, cmp.Or(p.allowed, "either"))
			}
		}
	}
	t.Logf("tasks per pairing:\n%s", table.String())
	if len(runs) != total {
		var extra []string
		known := map[string]bool{}
		for _, p := range phases {
			for _, payload := range p.payloads {
				known[payload] = true
			}
		}
		for payload := range runs {
			if !known[payload] {
				extra = append(extra, payload)
			}
		}
		slices.Sort(extra)
		t.Errorf("tasks ran that no phase enqueued: %v", extra)
	}
}

// checkRefusal asserts err is a producer's refusal for the running 0.1.0
// worker w: it names w, its process, both versions and the way out.
func checkRefusal(t *testing.T, call string, err error, w *oldWorker) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s went through while the 0.1.0 worker %s runs", call, w.id)
	}
	if !errors.Is(err, protocol.ErrIncompatible) {
		t.Errorf("%s: %v, want protocol.ErrIncompatible", call, err)
	}
	for _, s := range []string{
		fmt.Sprintf("%s (", w.id), fmt.Sprintf("pid %d)", w.pid()),
		"no protocol version (shardq 0.1.0)", "protocol " + protocol.Current.String(),
		"upgrade the workers first",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: the refusal %q does not say %q", call, err, s)
		}
	}
}

// checkSized enqueues the sized payloads for the future, asserts Redis
// holds the one above CompressAbove compressed, the other as it is, then
// runs them.
func checkSized(ctx context.Context, t *testing.T, rdb *redis.Client, c *queue.Client, insp *queue.Inspector) {
	t.Helper()
	ids := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(sized)) {
		info, err := c.Enqueue(ctx, queue.NewRawTask("sized", sized[name], queue.In(rollingQueue), queue.ProcessIn(time.Hour)))
		if err != nil {
			t.Fatalf("enqueue %s: %v", name, err)
		}
		ids[name] = info.ID
	}
	// twice the repeated phrase: only a payload stored as it is has it
	stored := func(name string) bool {
		half := len(sized[name]) / 2
		return redisHolds(ctx, t, rdb, sized[name][half/2:half/2+half])
	}
	if stored("d-big") {
		t.Errorf("Redis holds the %d-byte payload as it is, want it compressed", len(sized["d-big"]))
	}
	if !stored("d-plain") {
		t.Errorf("Redis does not hold the %d-byte payload as it is: the scan cannot tell a compressed one", len(sized["d-plain"]))
	}
	for name, id := range ids {
		if err := insp.RunTask(ctx, rollingQueue, id); err != nil {
			t.Fatalf("run %s (%s) now: %v", name, id, err)
		}
	}
}

// redisHolds reports whether a value in Redis contains b.
func redisHolds(ctx context.Context, t *testing.T, rdb *redis.Client, b []byte) bool {
	t.Helper()
	has := func(s string) bool { return strings.Contains(s, string(b)) }
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		var vals []string
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			vals = []string{rdb.Get(ctx, k).Val()}
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "list":
			vals = rdb.LRange(ctx, k, 0, -1).Val()
		case "set":
			vals = rdb.SMembers(ctx, k).Val()
		case "zset":
			vals = rdb.ZRange(ctx, k, 0, -1).Val()
		}
		if slices.ContainsFunc(vals, has) {
			return true
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan Redis: %v", err)
	}
	return false
}

// startNewWorker starts a current worker with cfg's timings, serving the
// rolling queue and recording its runs in book; the returned function
// shuts it down, as does the test's end.
func startNewWorker(ctx context.Context, t *testing.T, srv *redistest.Server, qcfg queue.Config, book *ledger, cfg worker.Config) func() {
	t.Helper()
	// its own client: a retried pop would delay tasks by a lease
	opts := srv.Options()
	opts.MaxRetries = -1
	wrdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = wrdb.Close() })
	mux := worker.NewMux()
	mux.HandleFunc("rolling", func(ctx context.Context, task *worker.Task) error {
		book.ranNew(string(task.Payload))
		return nil
	})
	mux.HandleFunc("sized", func(ctx context.Context, task *worker.Task) error {
		for name, b := range sized {
			if string(task.Payload) == string(b) {
				book.ranNew(name)
				return nil
			}
		}
		book.ranNew(fmt.Sprintf("sized-unknown-%d-bytes", len(task.Payload)))
		return nil
	})
	cfg.Config = qcfg
	cfg.Queues = map[string]int{rollingQueue: 1}
	cfg.Concurrency = 4
	return startWorker(ctx, t, wrdb, cfg, mux)
}

// startWorker starts a current worker; the returned function shuts it
// down, once, as does the test's end.
func startWorker(ctx context.Context, t *testing.T, rdb redis.UniversalClient, cfg worker.Config, h worker.Handler) func() {
	t.Helper()
	w, err := worker.NewServer(rdb, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := w.Shutdown(sctx); err != nil {
				t.Errorf("Shutdown of the current worker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// queueInfo reads the rolling queue's counts.
func queueInfo(ctx context.Context, t *testing.T, insp *queue.Inspector) *queue.QueueInfo {
	qi, err := insp.QueueInfo(ctx, rollingQueue)
	if err != nil {
		if ctx.Err() == nil {
			t.Logf("QueueInfo: %v", err)
		}
		return &queue.QueueInfo{}
	}
	return qi
}

// queueIdle reports whether the rolling queue holds no task in any state.
func queueIdle(ctx context.Context, t *testing.T, insp *queue.Inspector) bool {
	qi, err := insp.QueueInfo(ctx, rollingQueue)
	if err != nil {
		if ctx.Err() == nil {
			t.Logf("QueueInfo: %v", err)
		}
		return false
	}
	return qi.Pending+qi.Active+qi.Scheduled+qi.Retry+qi.Dead+qi.Waiting == 0
}

// missing returns the payloads that did not run.
func missing(runs map[string][]string, payloads []string) []string {
	var m []string
	for _, p := range payloads {
		if len(runs[p]) == 0 {
			m = append(m, p)
		}
	}
	return m
}
