package worker

import (
	"context"
	"fmt"
	"github.com/shardq/shardq/internal/outbox"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// BenchmarkProcess measures processing throughput with a no-op handler:
// b.N tasks of 100 bytes are enqueued first (not timed), then a worker
// with the given concurrency runs them all, first pop to last ack. It
// also reports the CPU per task of this process and of Redis, as
// shardq bench does. The prefetch=off runs turn Config.Prefetch off, to
// show what leasing ahead of free slots gives. The idle-queue run serves
// an empty queue beside, whose fetcher blocks holding a slot: the busy
// queue's batches must not wait for that slot.
func BenchmarkProcess(b *testing.B) {
	for _, c := range []struct {
		conc     int
		prefetch int
		idle     bool
	}{{16, 0, false}, {64, 0, false}, {16, -1, false}, {64, -1, false}, {16, 0, true}} {
		name := fmt.Sprintf("concurrency=%d", c.conc)
		if c.prefetch < 0 {
			name += "/prefetch=off"
		}
		if c.idle {
			name += "/idle-queue"
		}
		conc := c.conc
		b.Run(name, func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			qcfg := queue.Config{Prefix: redistest.Prefix(b)}
			client, _ := queue.NewClient(rdb, qcfg)
			insp, _ := queue.NewInspector(rdb, qcfg)
			ctx := context.Background()
			payload := make([]byte, 100)
			for i := 0; i < b.N; i += 1000 {
				batch := make([]*queue.Task, min(1000, b.N-i))
				for j := range batch {
					batch[j] = queue.NewRawTask("noop", payload)
				}
				if _, err := client.EnqueueMany(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			cfg := Config{Config: qcfg, Concurrency: conc, Prefetch: c.prefetch}
			if c.idle {
				cfg.Queues = map[string]int{queue.DefaultQueue: 1, "idle": 1}
			}
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			s, err := NewServer(rdb, cfg, HandlerFunc(func(context.Context, *Task) error {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return nil
			}))
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC() // the fill's garbage is not the worker's
			redis0, cpu0 := redisCPU(b, rdb), processCPU()
			b.ResetTimer()
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			<-all
			// the last acks: wait until nothing is active
			for {
				qi, err := insp.QueueInfo(ctx, queue.DefaultQueue)
				if err != nil || qi.Active == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(n/b.Elapsed().Seconds(), "tasks/s")
			b.ReportMetric(float64(processCPU()-cpu0)/1e3/n, "client-cpu-us/task")
			b.ReportMetric((redisCPU(b, rdb)-redis0)*1e6/n, "redis-cpu-us/task")
			_ = s.Shutdown(ctx)
		})
	}
}

// BenchmarkLatency measures enqueue-to-handler-start latency on an idle
// worker: each task is enqueued after the previous one started, so the
// worker is blocked in its slice when it arrives.
func BenchmarkLatency(b *testing.B) {
	rdb := redistest.Start(b).Client(b)
	qcfg := queue.Config{Prefix: redistest.Prefix(b)}
	client, _ := queue.NewClient(rdb, qcfg)
	ctx := context.Background()
	started := make(chan time.Time, 1)
	cfg := Config{Config: qcfg, Concurrency: 16}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(rdb, cfg, HandlerFunc(func(context.Context, *Task) error {
		started <- time.Now()
		return nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Shutdown(ctx) }()
	time.Sleep(100 * time.Millisecond)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		sent := time.Now()
		if _, err := client.Enqueue(ctx, queue.NewRawTask("ping", nil)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-started).Sub(sent))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkRunBatch measures what a worker does per task between two
// pops, without Redis: it hands batches of 16 leased tasks to the runners,
// as a fetcher does, and a no-op handler acks each; every round waits for
// the whole batch's slots, then takes the outcomes, as the next pop would.
func BenchmarkRunBatch(b *testing.B) {
	const batch = 16
	// the client is never called
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	cfg := Config{Concurrency: batch}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	s.outbox = outbox.New[outcome]()
	s.handlerCtx, s.cancelTasks = context.WithCancelCause(context.Background())
	s.runners = newRunners(s.runJob)
	s.flows = s.newFlows()
	defer s.runners.stop()
	p := s.parts[0]
	msgs := make([]leased, batch)
	for i := range msgs {
		m := wire.Message{ID: wire.NewID(), Type: "noop", Payload: make([]byte, 100), Raw: true, MaxRetry: 25, EnqueuedAt: 1}
		enc, _ := m.Encode()
		msgs[i] = leased{id: m.ID, msg: string(enc), attempt: 1, token: 1, at: 1}
	}
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := s.slots.TopUp(ctx, p.share, 0, batch, batch, time.Second)
		s.outbox.Take(maxOutcomeBatch)
		tasks := make([]leased, n)
		copy(tasks, msgs)
		s.start(p, tasks)
	}
	s.tasks.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/task")
}

// processCPU is this process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDequeueLoop measures the Redis side of processing with nothing
// else in the way: one goroutine pops batches of 16 or 300 (the pop
// carrying the last batch's acks, as a busy fetcher's does) and acks every
// task at once, through the worker's own dequeue path, of plain tasks and
// of tasks spread over 10,000 groups. It reports the pop script's
// cost per task (EVALSHA time from INFO commandstats), Redis's CPU per
// task (INFO cpu) and this process's. Against BenchmarkProcess, the
// difference in client CPU is what the runners, the slots and the
// scheduler cost on top of the round trips.
func BenchmarkDequeueLoop(b *testing.B) {
	for _, keys := range []int{0, 10_000} {
		for _, batch := range []int{16, 300} {
			b.Run(fmt.Sprintf("keys=%d/batch=%d", keys, batch), func(b *testing.B) { benchDequeueLoop(b, keys, batch) })
		}
	}
}

// benchDequeueLoop is BenchmarkDequeueLoop with batches of batch tasks,
// spread over keys groups in turn (0: no key).
func benchDequeueLoop(b *testing.B, keys, batch int) {
	rdb := redistest.Start(b).Client(b)
	qcfg := queue.Config{Prefix: redistest.Prefix(b)}
	client, _ := queue.NewClient(rdb, qcfg)
	ctx := context.Background()
	payload := make([]byte, 100)
	for i := 0; i < b.N+batch; i += 1000 {
		tasks := make([]*queue.Task, 1000)
		for j := range tasks {
			var opts []queue.Option
			if keys > 0 {
				opts = append(opts, queue.Group(fmt.Sprint("k", (i+j)%keys)))
			}
			tasks[j] = queue.NewRawTask("noop", payload, opts...)
		}
		if _, err := client.EnqueueMany(ctx, tasks); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Config: qcfg, Concurrency: batch}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	s.outbox = outbox.New[outcome]()
	p := s.parts[0]
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	redis0, cpu0 := redisCPU(b, rdb), processCPU()
	b.ResetTimer()
	for done := 0; done < b.N; {
		r, err := s.dequeue(ctx, p, batch, 0, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range r.tasks {
			s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeAck})
		}
		done += len(r.tasks)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/n, "client-cpu-us/task")
	b.ReportMetric((redisCPU(b, rdb)-redis0)*1e6/n, "redis-cpu-us/task")
	b.ReportMetric(commandUsec(b, rdb, "evalsha")/n, "script-us/task")
}

// redisCPU is the Redis server's CPU seconds so far (user and system).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	return infoField(info, "used_cpu_user") + infoField(info, "used_cpu_sys")
}

// commandUsec is the time Redis spent in cmd since its stats were reset,
// in microseconds (INFO commandstats).
func commandUsec(b *testing.B, rdb *redis.Client, cmd string) float64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if stats, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			return infoField(strings.ReplaceAll(stats, ",", "\r\n"), "usec")
		}
	}
	return 0
}

// infoField reads "name:value" or "name=value" from INFO text.
func infoField(info, name string) float64 {
	for _, line := range strings.Split(info, "\r\n") {
		for _, sep := range []string{":", "="} {
			if v, ok := strings.CutPrefix(line, name+sep); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return f
			}
		}
	}
	return 0
}
