package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func fmtSscan(s string, v any) (int, error) { return fmt.Sscan(s, v) }

func (b *bench) client() (*queue.Client, *queue.Inspector, error) {
	c, err := queue.NewClient(b.rdb, b.cfg)
	if err != nil {
		return nil, nil, err
	}
	i, err := queue.NewInspector(b.rdb, b.cfg)
	return c, i, err
}

func (b *bench) tasks(n int) []*queue.Task {
	payload := make([]byte, b.f.payload)
	out := make([]*queue.Task, n)
	for i := range out {
		out[i] = queue.NewRawTask("bench", payload)
	}
	return out
}

// fill enqueues n tasks in batches of 1000 onto q.
func (b *bench) fill(ctx context.Context, c *queue.Client, q string, n int) error {
	batch := b.tasks(1000)
	for done := 0; done < n; done += len(batch) {
		if _, err := c.EnqueueMany(ctx, batch[:min(len(batch), n-done)], queue.In(q)); err != nil {
			return err
		}
		if done%100_000 == 0 && done > 0 {
			b.progress("    %d of %d enqueued", done, n)
		}
	}
	return nil
}

func (b *bench) measureEnqueue(ctx context.Context) error {
	c, _, err := b.client()
	if err != nil {
		return err
	}
	for _, producers := range []int{1, 16} {
		const n = 20_000
		task := b.tasks(1)[0]
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := p; i < n; i += producers {
					if _, err := c.Enqueue(ctx, task, queue.In("enqueue")); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			return err
		}
		b.add(figure{Name: fmt.Sprintf("Enqueue, %d producer(s)", producers), Value: n / time.Since(start).Seconds(), Unit: "tasks/s",
			limitOf: "evalsha", LimitName: "EVALSHA unpipelined (median)", Goal: map[int]*goal{1: atLeast(0.5, true, ">= 50% of limit")}[producers]})
	}
	start := time.Now()
	const n = 200_000
	if err := b.fill(ctx, c, "enqueue", n); err != nil {
		return err
	}
	b.add(figure{Name: "EnqueueMany (1000 per call)", Value: n / time.Since(start).Seconds(), Unit: "tasks/s",
		Limit: b.limits.rpushPipelined, LimitName: "RPUSH pipelined", Goal: atLeast(200_000, false, ">= 200000")})
	b.cleanup()
	return nil
}

func (b *bench) measureProcess(ctx context.Context) error {
	for _, conc := range []int{16, 64} {
		if err := b.processRun(ctx, conc); err != nil {
			return err
		}
	}
	return nil
}

// processRun pre-fills the queue with tasks that carry their index, then
// runs it dry with a no-op handler. The rate runs from the first handler
// start to the last return; CPU (Redis's INFO, this process's rusage) from
// the worker's start until nothing is left. The figures are added only
// when every task ran exactly once and nothing is left pending, active,
// retrying, scheduled or dead.
func (b *bench) processRun(ctx context.Context, conc int) error {
	c, insp, err := b.client()
	if err != nil {
		return err
	}
	q := fmt.Sprintf("process-%d", conc)
	if err := b.fillIndexed(ctx, c, q, b.f.tasks); err != nil {
		return err
	}
	n := b.f.tasks
	tl := newTally(n, 0)
	cfg := worker.Config{Config: b.cfg, Queues: map[string]int{q: 1}, Concurrency: conc}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(b.rdb, cfg, tl)
	if err != nil {
		return err
	}
	// Collect the fill's garbage now, so the client's CPU below is the
	// worker's own (testing.B does the same before every benchmark).
	runtime.GC()
	redisCPU0, err := redisCPU(ctx, b)
	if err != nil {
		return err
	}
	selfCPU0 := selfCPU()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	// On an early return (the run's timeout, Redis gone) the worker stops
	// too; on the normal path it is already stopped and this is a no-op.
	defer stopWorker(srv)
	select {
	case <-tl.all:
	case <-ctx.Done():
		return ctx.Err()
	}
	left, err := b.waitEmpty(ctx, insp, q)
	if err != nil {
		return err
	}
	selfUS := float64((selfCPU() - selfCPU0).Microseconds()) / float64(n)
	redisCPU1, err := redisCPU(ctx, b)
	if err != nil {
		return err
	}
	redisUS := (redisCPU1 - redisCPU0) * 1e6 / float64(n)
	stopWorker(srv)
	// checked after the stop, so a late second run of a task counts too
	if err := tl.check(left); err != nil {
		return fmt.Errorf("concurrency %d: no figure: %w", conc, err)
	}
	var target *goal
	if conc == 16 {
		target = atLeast(50_000, false, ">= 50000")
	}
	elapsed := tl.elapsed()
	b.add(figure{Name: fmt.Sprintf("process, no-op handler, concurrency %d", conc), Value: float64(n) / elapsed.Seconds(), Unit: "tasks/s",
		Limit: b.limits.lpopPipelined, LimitName: "LPOP pipelined", Goal: target})
	if conc == 16 {
		b.add(figure{Name: "CPU per task: Redis", Value: redisUS, Unit: "µs"})
		b.add(figure{Name: "CPU per task: client", Value: selfUS, Unit: "µs"})
		b.add(figure{Name: "CPU per task: Redis + client", Value: redisUS + selfUS, Unit: "µs",
			Limit: 1e6/b.limits.rpushPipelined + 1e6/b.limits.lpopPipelined, LimitName: "RPUSH+LPOP pipelined, Redis µs", Goal: atMost(20, false, "<= 20")})
	}
	b.cleanup()
	return nil
}

// errBenchCheck is a processing run whose tasks did not each run exactly
// once, or that left tasks behind: its figures are not printed.
var errBenchCheck = errors.New("exactly-once check failed")

// tally is a processing run's no-op handler and its count: how often each
// task the run enqueued ran (found by the index its payload carries), how
// many foreign tasks ran, how many per partition (when asked), and the
// first start and last return. all closes once as many runs as tasks ended.
type tally struct {
	n                          int
	counts                     []atomic.Int32
	perPart                    []atomic.Int64 // nil: not counted
	first, last, done, foreign atomic.Int64
	all                        chan struct{}
}

// newTally returns the tally of a run of n tasks, counting per partition
// when partitions > 0.
func newTally(n, partitions int) *tally {
	t := &tally{n: n, counts: make([]atomic.Int32, n), all: make(chan struct{})}
	if partitions > 0 {
		t.perPart = make([]atomic.Int64, partitions)
	}
	return t
}

// ProcessTask counts one run of task.
func (tl *tally) ProcessTask(_ context.Context, task *worker.Task) error {
	tl.first.CompareAndSwap(0, time.Now().UnixNano())
	i, ok := taskIndex(task.Payload)
	ok = ok && i < tl.n
	if tl.perPart != nil {
		ok = ok && task.Partition >= 0 && task.Partition < len(tl.perPart)
	}
	if ok {
		tl.counts[i].Add(1)
		if tl.perPart != nil {
			tl.perPart[task.Partition].Add(1)
		}
	} else {
		tl.foreign.Add(1)
	}
	if tl.done.Add(1) == int64(tl.n) {
		close(tl.all)
	}
	storeMax(&tl.last, time.Now().UnixNano())
	return nil
}

// elapsed is the time from the first start to the last return.
func (tl *tally) elapsed() time.Duration { return time.Duration(tl.last.Load() - tl.first.Load()) }

// check is exactlyOnce of the run, left tasks being left in the queue.
func (tl *tally) check(left int64) error { return exactlyOnce(tl.counts, tl.foreign.Load(), left) }

// exactlyOnce checks every task ran once, no foreign task ran and nothing
// was left in the queue.
func exactlyOnce(counts []atomic.Int32, foreign, left int64) error {
	if foreign > 0 {
		return fmt.Errorf("%w: %d handler calls for tasks the run did not enqueue", errBenchCheck, foreign)
	}
	if left > 0 {
		return fmt.Errorf("%w: %d tasks left pending, active, retrying, scheduled or dead", errBenchCheck, left)
	}
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			return fmt.Errorf("%w: task %d ran %d times", errBenchCheck, i, c)
		}
	}
	return nil
}

// waitEmpty polls until q has nothing pending, active, retrying, scheduled,
// parked or dead, for at most 30 s, and returns what is left.
func (b *bench) waitEmpty(ctx context.Context, insp *queue.Inspector, q string) (int64, error) {
	end := time.Now().Add(30 * time.Second)
	for {
		qi, err := insp.QueueInfo(ctx, q)
		if err != nil {
			return 0, err
		}
		left := qi.Pending + qi.Active + qi.Retry + qi.Scheduled + qi.Waiting + qi.Dead
		if left == 0 || time.Now().After(end) {
			return left, nil
		}
		time.Sleep(time.Millisecond)
	}
}

// fillIndexed enqueues n tasks onto q in batches of 1000, each payload
// opening with the task's index (8 bytes, big-endian).
func (b *bench) fillIndexed(ctx context.Context, c *queue.Client, q string, n int) error {
	for done := 0; done < n; done += 1000 {
		batch := make([]*queue.Task, 0, 1000)
		for i := done; i < min(n, done+1000); i++ {
			batch = append(batch, queue.NewRawTask("bench", indexedPayload(i, b.f.payload)))
		}
		if _, err := c.EnqueueMany(ctx, batch, queue.In(q)); err != nil {
			return err
		}
	}
	return nil
}

// indexedPayload is a payload of size bytes (at least 8) opening with i.
func indexedPayload(i, size int) []byte {
	p := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(p, uint64(i))
	return p
}

// taskIndex reads the index indexedPayload wrote.
func taskIndex(p []byte) (int, bool) {
	if len(p) < 8 {
		return 0, false
	}
	return int(binary.BigEndian.Uint64(p)), true
}

// storeMax raises v to x unless it is already higher.
func storeMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// redisCPU is Redis's CPU seconds so far (user + system, all threads).
func redisCPU(ctx context.Context, b *bench) (float64, error) {
	u, err := infoFloat(ctx, b.rdb, "cpu", "used_cpu_user")
	if err != nil {
		return 0, err
	}
	s, err := infoFloat(ctx, b.rdb, "cpu", "used_cpu_sys")
	return u + s, err
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The steady latency run: open loop, several producers each on a fixed
// schedule, a warm-up, then the measured window.
const (
	latencyRate      = 2000
	latencyProducers = 4
	latencyWarmUp    = 500 * time.Millisecond
	latencyWindow    = 3 * time.Second
)

func (b *bench) measureLatency(ctx context.Context) error {
	c, _, err := b.client()
	if err != nil {
		return err
	}
	interval := time.Second / latencyRate
	total := int((latencyWarmUp + latencyWindow) / interval)
	warm := int(latencyWarmUp / interval)
	// Each task carries its index; its latency runs from its planned send
	// time, so a send that is late (the producer held up) counts against
	// it, as it would for the application waiting on it.
	planned := make([]time.Time, total+4)
	lats := make(chan beat, total+16)
	cfg := worker.Config{Config: b.cfg, Queues: map[string]int{"latency": 1}, Concurrency: 16}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(b.rdb, cfg, worker.HandlerFunc(func(_ context.Context, t *worker.Task) error {
		if i, ok := taskIndex(t.Payload); ok && i < len(planned) {
			lats <- beat{i, time.Since(planned[i])}
		}
		return nil
	}))
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer stopWorker(srv)
	send := func(i int) error {
		_, err := c.Enqueue(ctx, queue.NewRawTask("ping", indexedPayload(i, b.f.payload)), queue.In("latency"))
		return err
	}
	// recv waits for the next report, but never past the run's timeout.
	recv := func() (beat, error) {
		select {
		case d := <-lats:
			return d, nil
		case <-ctx.Done():
			return beat{}, ctx.Err()
		}
	}

	t0 := time.Now().Add(10 * time.Millisecond)
	for i := range total {
		planned[i] = t0.Add(time.Duration(i) * interval)
	}
	var late atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	lastSent := make([]time.Time, latencyProducers)
	for p := range latencyProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < total; i += latencyProducers {
				if d := time.Until(planned[i]); d > 0 {
					sleepCtxBench(ctx, d)
				} else if -d > interval && i >= warm {
					late.Add(1)
				}
				if err := send(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				lastSent[p] = time.Now()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, total-warm)
	for range total {
		r, err := recv()
		if err != nil {
			return err
		}
		if r.i >= warm {
			lat = append(lat, r.d)
		}
	}
	end := slices.MaxFunc(lastSent, time.Time.Compare)
	achieved := float64(total-warm) / end.Sub(planned[warm]).Seconds()
	if n := late.Load(); n > 0 {
		b.progress("    %d of %d beats were sent more than %s late", n, total-warm, interval)
	}
	b.addLatency("steady 2000/s", lat, atMost(2000, false, "<= 2ms"), nil)
	b.add(figure{Name: "latency steady 2000/s, achieved rate", Value: achieved, Unit: "tasks/s", Limit: latencyRate, LimitName: "planned rate"})
	b.add(figure{Name: "latency steady 2000/s, late beats", Value: float64(late.Load()), Unit: "beats"})

	// after idle: each task sent after 2 s with nothing to do
	var idle []time.Duration
	for k := range 4 {
		sleepCtxBench(ctx, 2*time.Second)
		planned[total+k] = time.Now()
		if err := send(total + k); err != nil {
			return err
		}
		r, err := recv()
		if err != nil {
			return err
		}
		idle = append(idle, r.d)
	}
	b.addLatency("after 2s idle", idle, nil, atMost(5000, false, "<= 5ms"))
	return nil
}

// beat is one latency task's report: its index and its latency.
type beat struct {
	i int
	d time.Duration
}

// addLatency adds p50, p99 and max, with the goals given for p99 and max.
func (b *bench) addLatency(what string, lat []time.Duration, p99, most *goal) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
	b.add(figure{Name: "latency " + what + ", p50", Value: us(lat[len(lat)/2]), Unit: "µs", limitOf: "rtt", LimitName: "EVALSHA round trip (median)"})
	b.add(figure{Name: "latency " + what + ", p99", Value: us(lat[len(lat)*99/100]), Unit: "µs", limitOf: "rtt", LimitName: "EVALSHA round trip (median)", Goal: p99})
	b.add(figure{Name: "latency " + what + ", max", Value: us(lat[len(lat)-1]), Unit: "µs", limitOf: "rtt", LimitName: "EVALSHA round trip (median)", Goal: most})
}

// stopWorker shuts a bench worker down, waiting at most 10 s.
func stopWorker(srv *worker.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

func sleepCtxBench(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (b *bench) measureMemory(ctx context.Context) error {
	c, _, err := b.client()
	if err != nil {
		return err
	}
	before, err := usedMemory(ctx, b.rdb)
	if err != nil {
		return err
	}
	if err := b.fill(ctx, c, "memory", b.f.memTasks); err != nil {
		return err
	}
	after, err := usedMemory(ctx, b.rdb)
	if err != nil {
		return err
	}
	b.add(figure{Name: fmt.Sprintf("memory per pending task (%d B payload)", b.f.payload), Value: float64(after-before) / float64(b.f.memTasks),
		Unit: "bytes", Limit: b.limits.listBytes, LimitName: "plain list item of the payload", Goal: atMost(160, false, "<= 160")})
	b.cleanup()
	return nil
}
