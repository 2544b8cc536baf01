package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
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
// with the given concurrency runs them all, first pop to last ack.
func BenchmarkProcess(b *testing.B) {
	for _, conc := range []int{16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
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
				if _, err := client.EnqueueBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			cfg := Config{Config: qcfg, Concurrency: conc}
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
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
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
	s.outbox = newOutbox()
	s.handlerCtx, s.cancelTasks = context.WithCancelCause(context.Background())
	s.runners = newRunners(s.runJob)
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
		n := s.slots.topUp(ctx, 0, batch, batch, time.Second)
		s.outbox.take(maxOutcomeBatch)
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
