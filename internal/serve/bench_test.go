package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/outbox"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// BenchmarkRunBatch measures what the engine does per task between two
// pops, without Redis and without package worker's Task: it hands batches of 16 leased tasks to the runners,
// as a fetcher does, and a no-op handler acks each; every round waits for
// the whole batch's slots, then takes the outcomes, as the next pop would.
func BenchmarkRunBatch(b *testing.B) {
	const batch = 16
	// the client is never called
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	s := New(rdb, (&bundle{rdb: rdb}).config(b, Config{Concurrency: batch}, succeed))
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
	cpu0 := redistest.ProcessCPU()
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
	b.ReportMetric(float64(redistest.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/task")
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
	s := New(rdb, (&bundle{rdb: rdb, qcfg: qcfg}).config(b, Config{Concurrency: batch}, succeed))
	s.outbox = outbox.New[outcome]()
	p := s.parts[0]
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	redis0, cpu0 := redistest.CPU(b, rdb), redistest.ProcessCPU()
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
	b.ReportMetric(float64(redistest.ProcessCPU()-cpu0)/1e3/n, "client-cpu-us/task")
	b.ReportMetric((redistest.CPU(b, rdb)-redis0)*1e6/n, "redis-cpu-us/task")
	b.ReportMetric(redistest.CommandUsec(b, rdb, "evalsha")/n, "script-us/task")
}
