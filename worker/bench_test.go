package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
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
			redis0, cpu0 := redistest.CPU(b, rdb), redistest.ProcessCPU()
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
			b.ReportMetric(float64(redistest.ProcessCPU()-cpu0)/1e3/n, "client-cpu-us/task")
			b.ReportMetric((redistest.CPU(b, rdb)-redis0)*1e6/n, "redis-cpu-us/task")
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
