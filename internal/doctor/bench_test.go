package doctor

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// roundTrips counts a client's round trips to Redis: each command sent
// alone, and each pipeline (or transaction), counts one.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// BenchmarkDoctor loads SHARDQ_DOCTOR_BENCH tasks (say 1000000) into a
// private redis-server, a tenth scheduled an hour ahead and the rest
// pending, over one queue of 4 partitions, then audits it. It reports
// the time of one audit and its round trips. Without the variable it is
// skipped: the load takes minutes and a few hundred MB.
//
//	SHARDQ_DOCTOR_BENCH=1000000 go test -run '^$' -bench BenchmarkDoctor -benchtime 1x ./internal/doctor/
func BenchmarkDoctor(b *testing.B) {
	total, _ := strconv.Atoi(os.Getenv("SHARDQ_DOCTOR_BENCH"))
	if total <= 0 {
		b.Skip("set SHARDQ_DOCTOR_BENCH to the number of tasks to load")
	}
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	cfg := queue.Config{Prefix: "bench", Partitions: map[string]int{"default": 4}}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	const batch = 1000
	payload := make([]byte, 100)
	for done := 0; done < total; done += batch {
		n := min(batch, total-done)
		tasks := make([]*queue.Task, n)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("t", payload)
		}
		var opts []queue.Option
		if (done/batch)%10 == 9 {
			opts = append(opts, queue.ProcessIn(time.Hour))
		}
		if _, err := client.EnqueueMany(ctx, tasks, opts...); err != nil {
			b.Fatal(err)
		}
	}
	mem, _ := rdb.Info(ctx, "memory").Result()
	b.Logf("loaded %d tasks in %s; redis %s", total, time.Since(start).Round(time.Millisecond), usedMemory(mem))

	counted := redis.NewClient(srv.Options())
	defer counted.Close()
	hook := &roundTrips{}
	counted.AddHook(hook)
	var ms runtime.MemStats
	b.ResetTimer()
	for range b.N {
		rep, err := Run(ctx, counted, Options{Prefix: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Violations != 0 {
			b.Fatalf("%d violations:%s", rep.Violations, describe(rep))
		}
		b.Logf("audited %d partitions, %d keys in %s", rep.Partitions, rep.Keys, rep.Took)
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(hook.n.Load())/float64(b.N), "round-trips/op")
	b.ReportMetric(float64(total), "tasks")
	b.Logf("Go heap in use after: %d MB; total allocated: %d MB", ms.HeapInuse>>20, ms.TotalAlloc>>20)
}

// usedMemory picks used_memory_human from INFO memory.
func usedMemory(info string) string {
	var v string
	for _, line := range strings.Split(info, "\n") {
		if _, err := fmt.Sscanf(line, "used_memory_human:%s", &v); err == nil {
			return v
		}
	}
	return "?"
}
