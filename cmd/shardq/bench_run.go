package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
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
		if _, err := c.EnqueueBatch(ctx, batch[:min(len(batch), n-done)], queue.In(q)); err != nil {
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
			Limit: b.limits.evalsha, LimitName: "EVALSHA unpipelined", Goal: map[int]*goal{1: atLeast(0.5, true, ">= 50% of limit")}[producers]})
	}
	start := time.Now()
	const n = 200_000
	if err := b.fill(ctx, c, "enqueue", n); err != nil {
		return err
	}
	b.add(figure{Name: "EnqueueBatch (1000 per batch)", Value: n / time.Since(start).Seconds(), Unit: "tasks/s",
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

// processRun pre-fills the queue, then runs it dry with a no-op handler,
// first pop to last ack, measuring Redis's CPU (INFO) and this process's
// (rusage) per task.
func (b *bench) processRun(ctx context.Context, conc int) error {
	c, insp, err := b.client()
	if err != nil {
		return err
	}
	q := fmt.Sprintf("process-%d", conc)
	if err := b.fill(ctx, c, q, b.f.tasks); err != nil {
		return err
	}
	var done atomic.Int64
	all := make(chan struct{})
	n := int64(b.f.tasks)
	cfg := worker.Config{Config: b.cfg, Queues: map[string]int{q: 1}, Concurrency: conc}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(b.rdb, cfg, worker.HandlerFunc(func(context.Context, *worker.Task) error {
		if done.Add(1) == n {
			close(all)
		}
		return nil
	}))
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
	start := time.Now()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	// On an early return (the run's timeout, Redis gone) the worker stops
	// too; on the normal path it is already stopped and this is a no-op.
	defer stopWorker(srv)
	select {
	case <-all:
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		qi, err := insp.QueueInfo(ctx, q)
		if err != nil {
			return err
		}
		if qi.Active == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	selfUS := float64((selfCPU() - selfCPU0).Microseconds()) / float64(n)
	redisCPU1, err := redisCPU(ctx, b)
	if err != nil {
		return err
	}
	redisUS := (redisCPU1 - redisCPU0) * 1e6 / float64(n)
	stopWorker(srv)
	var target *goal
	if conc == 16 {
		target = atLeast(50_000, false, ">= 50000")
	}
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

func (b *bench) measureLatency(ctx context.Context) error {
	c, _, err := b.client()
	if err != nil {
		return err
	}
	// Each task carries its send time; the handler reports the latency
	// into a buffer that holds every report, so handlers never wait on it.
	const rate, seconds = 2000, 3
	lats := make(chan time.Duration, rate*seconds+16)
	cfg := worker.Config{Config: b.cfg, Queues: map[string]int{"latency": 1}, Concurrency: 16}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(b.rdb, cfg, worker.HandlerFunc(func(_ context.Context, t *worker.Task) error {
		var sent int64
		_, _ = fmt.Sscan(string(t.Payload), &sent)
		lats <- time.Since(time.Unix(0, sent))
		return nil
	}))
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer stopWorker(srv)
	send := func() error {
		_, err := c.Enqueue(ctx, queue.NewRawTask("ping", []byte(fmt.Sprint(time.Now().UnixNano()))), queue.In("latency"))
		return err
	}
	// recv waits for the next report, but never past the run's timeout.
	recv := func() (time.Duration, error) {
		select {
		case d := <-lats:
			return d, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}

	// steady: 2,000 tasks/s for 3 s
	tick := time.NewTicker(time.Second / rate)
	for range rate * seconds {
		<-tick.C
		if err := send(); err != nil {
			tick.Stop()
			return err
		}
	}
	tick.Stop()
	lat := make([]time.Duration, 0, rate*seconds)
	for range rate * seconds {
		d, err := recv()
		if err != nil {
			return err
		}
		lat = append(lat, d)
	}
	b.addLatency("steady 2000/s", lat, atMost(2000, false, "<= 2ms"), nil)

	// after idle: each task sent after 2 s with nothing to do
	var idle []time.Duration
	for range 4 {
		sleepCtxBench(ctx, 2*time.Second)
		if err := send(); err != nil {
			return err
		}
		d, err := recv()
		if err != nil {
			return err
		}
		idle = append(idle, d)
	}
	b.addLatency("after 2s idle", idle, nil, atMost(5000, false, "<= 5ms"))
	return nil
}

// addLatency adds p50, p99 and max, with the goals given for p99 and max.
func (b *bench) addLatency(what string, lat []time.Duration, p99, most *goal) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
	rtt := b.limits.evalshaRTT
	b.add(figure{Name: "latency " + what + ", p50", Value: us(lat[len(lat)/2]), Unit: "µs", Limit: rtt, LimitName: "EVALSHA round trip"})
	b.add(figure{Name: "latency " + what + ", p99", Value: us(lat[len(lat)*99/100]), Unit: "µs", Limit: rtt, LimitName: "EVALSHA round trip", Goal: p99})
	b.add(figure{Name: "latency " + what + ", max", Value: us(lat[len(lat)-1]), Unit: "µs", Limit: rtt, LimitName: "EVALSHA round trip", Goal: most})
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
