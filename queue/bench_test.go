package queue

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkEnqueue measures single Enqueue calls from 1, 8, 12, 16 and 64
// producers (goroutines). With many, calls that find lineDepth others in
// flight for their partition wait in line and go out together
// (enqueue_send_coalesce.go); "/coalescing=off" is Config.NoCoalescing, one round trip
// per call. "redis-µs/op" is the server's CPU per task.
// "round-trips/op" counts what the client sent (a go-redis hook).
func BenchmarkEnqueue(b *testing.B) {
	for _, bc := range []struct {
		name      string
		producers int
		off       bool
	}{
		{"producers=1", 1, false},
		{"producers=8", 8, false}, {"producers=8/coalescing=off", 8, true},
		{"producers=12", 12, false}, {"producers=12/coalescing=off", 12, true},
		{"producers=16", 16, false}, {"producers=16/coalescing=off", 16, true},
		{"producers=64", 64, false}, {"producers=64/coalescing=off", 64, true},
	} {
		b.Run(bc.name, func(b *testing.B) {

			bd := setupTB(b, Config{NoCoalescing: bc.off})
			payload := make([]byte, 100)
			ctx := context.Background()
			if _, err := bd.client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
				b.Fatal(err) // warm: the script loaded, the queue registered
			}
			sent0, cpu0 := bd.hook.roundTrips.Load(), redisCPU(b, bd.rdb)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / bc.producers
			for p := range bc.producers {
				n := per
				if p == 0 {
					n += b.N % bc.producers
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						if _, err := bd.client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(bd.hook.roundTrips.Load()-sent0)/float64(b.N), "round-trips/op")
			b.ReportMetric((redisCPU(b, bd.rdb)-cpu0).Seconds()*1e6/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// redisCPU reads the server's CPU time so far (INFO cpu: used_cpu_user
// plus used_cpu_sys).
func redisCPU(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu line %q: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// BenchmarkEnqueueMaxDepth measures single Enqueue calls from 16
// producers into a queue whose MaxDepth is never reached: every call runs
// enqueue_capped.lua, which reads the limit and the depth before the push.
// Compare with BenchmarkEnqueue/producers=16 (no MaxDepth: the plain
// script, after the first call).
func BenchmarkEnqueueMaxDepth(b *testing.B) {
	bd := setupTB(b, Config{})
	bb := benchBundle{client: bd.client}
	ctx := context.Background()
	if err := bd.insp.SetLimits(ctx, DefaultQueue, Limits{MaxDepth: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 100)
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range 16 {
		n := b.N / 16
		if p == 0 {
			n += b.N % 16
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if _, err := bb.client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkEnqueueDeadline measures single Enqueue calls under a context
// with a deadline, from a client with and without ContextTimeoutEnabled:
// without it, every call is watched from a second goroutine (rcall.Do),
// the cost the README quotes.
func BenchmarkEnqueueDeadline(b *testing.B) {
	bd := setupTB(b, Config{})
	payload := make([]byte, 100)
	for _, enabled := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "ContextTimeoutEnabled"}[enabled], func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: bd.srv.Addr, ContextTimeoutEnabled: enabled, MaxRetries: -1})
			defer rdb.Close()
			client, err := NewClient(rdb, bd.cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if _, err := client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// BenchmarkEnqueueBatch measures EnqueueMany with batches of 500 tasks of
// 100 bytes: one script call per batch.
func BenchmarkEnqueueBatch(b *testing.B) {
	bb := benchSetup(b)
	ctx := context.Background()
	payload := make([]byte, 100)
	batch := make([]*Task, 500)
	for i := range batch {
		batch[i] = NewRawTask("bench", payload)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		n := min(len(batch), b.N-i)
		if _, err := bb.client.EnqueueMany(ctx, batch[:n]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

type benchBundle struct{ client *Client }

func benchSetup(b *testing.B) benchBundle {
	b.Helper()
	bd := setupTB(b, Config{})
	return benchBundle{client: bd.client}
}

// BenchmarkBareEvalSha is the yardstick for BenchmarkEnqueue/producers=1:
// one unpipelined EVALSHA of a trivial script, the bound of one round trip.
func BenchmarkBareEvalSha(b *testing.B) {
	bb := setupTB(b, Config{})
	s := redis.NewScript("return 1")
	ctx := context.Background()
	_ = s.Load(ctx, bb.rdb)
	b.ResetTimer()
	for range b.N {
		if err := s.EvalSha(ctx, bb.rdb, []string{"{x}k"}).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkEnqueueCommands measures single Enqueue calls from one producer
// and counts the Redis commands each costs with INFO commandstats deltas
// on the private server: the EVALSHA and every command its script runs
// ("cmds/op"); "round-trips/op" counts what the client sent (a go-redis
// hook). Its -benchmem figures are the client's allocations per Enqueue.
func BenchmarkEnqueueCommands(b *testing.B) {
	bb := setupTB(b, Config{})
	ctx := context.Background()
	payload := make([]byte, 100)
	// warm: the script loaded, the queue registered
	if _, err := bb.client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
		b.Fatal(err)
	}
	calls0 := commandCalls(b, bb.rdb)
	sent0 := bb.hook.roundTrips.Load()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bb.client.Enqueue(ctx, NewRawTask("bench", payload)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(commandCalls(b, bb.rdb)-calls0)/float64(b.N), "cmds/op")
	b.ReportMetric(float64(bb.hook.roundTrips.Load()-sent0)/float64(b.N), "round-trips/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// commandCalls sums the calls of every command in INFO commandstats,
// those run inside scripts included, less INFO's own.
func commandCalls(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(k, "cmdstat_") || k == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			tb.Fatalf("commandstats line %q: %v", line, err)
		}
		total += n
	}
	return total
}
