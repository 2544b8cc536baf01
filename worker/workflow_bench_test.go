package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/graphshape"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// BenchmarkWorkflow measures what a workflow node costs Redis against a
// plain task, in one run on one private redis-server: 10,000 plain tasks
// (EnqueueMany, then processed) beside 10,000 nodes (EnqueueWorkflow, then
// run to their end): ten graphs of 1,000 nodes, the size, or one
// of 10,000 (nodes=...), all with 100-byte payloads and a no-op handler at
// concurrency 16. It reports Redis CPU per task and per node, from enqueue
// to the last ack (the graph's includes releasing its nodes), and Redis
// memory per task pending and per node while the graph runs: waiting just
// after it was recorded, and enqueued (the root's children, released, not
// yet run). Shapes, for a graph of n nodes: fan-out, a root with n-1
// children; fan-in, a root with n-2 children, all parents of one last
// node; layers, layers of 100 nodes, each node a child of two nodes of the
// layer above. Run it with -benchtime 1x; each iteration is one whole run.
func BenchmarkWorkflow(b *testing.B) {
	for _, shape := range graphshape.Shapes {
		for _, size := range []int{1_000, 10_000} {
			b.Run(fmt.Sprintf("shape=%s/nodes=%d", shape, size), func(b *testing.B) {
				benchWorkflow(b, shape, size)
			})
		}
	}
}

// benchWorkflow reports measureWorkflow's figures for graphs of shape
// and size nodes.
func benchWorkflow(b *testing.B, shape string, size int) {
	var m workflowFigures
	for range b.N {
		m = measureWorkflow(b, shape, size)
	}
	b.ReportMetric(m.plainCPU, "plain-redis-cpu-us/task")
	b.ReportMetric(m.nodeCPU, "node-redis-cpu-us/node")
	b.ReportMetric(m.nodeCPU/m.plainCPU, "cpu-x")
	b.ReportMetric(m.plainMem, "plain-B/task")
	b.ReportMetric(m.waitingMem, "waiting-B/node")
	b.ReportMetric(m.waitingMem/m.plainMem, "waiting-mem-x")
	if m.enqueuedMem > 0 {
		b.ReportMetric(m.enqueuedMem, "enqueued-B/node")
		b.ReportMetric(m.enqueuedMem/m.plainMem, "enqueued-mem-x")
	}
}

type workflowFigures struct {
	plainCPU, nodeCPU                 float64 // Redis µs
	plainMem, waitingMem, enqueuedMem float64 // bytes
}

// measureWorkflow runs 10,000 plain tasks, then 10,000 nodes in graphs of
// size nodes.
func measureWorkflow(b *testing.B, shape string, size int) workflowFigures {
	const n = 10_000
	graphs := n / size
	b.StopTimer()
	rdb := redistest.Start(b).Client(b)
	qcfg := queue.Config{Prefix: redistest.Prefix(b)}
	client, _ := queue.NewClient(rdb, qcfg)
	insp, _ := queue.NewInspector(rdb, qcfg)
	ctx := context.Background()
	payload := make([]byte, 100)
	var f workflowFigures

	// warm the script cache and the queues' registrations
	wf := queue.NewWorkflow()
	wf.Add("warm", queue.NewRawTask("noop", payload, queue.In("plain")))
	if _, err := client.EnqueueWorkflow(ctx, wf); err != nil {
		b.Fatal(err)
	}
	run(b, rdb, qcfg, insp, "plain", 1)

	// plain tasks
	m0, c0 := usedMemory(b, rdb), redistest.CPU(b, rdb)
	tasks := make([]*queue.Task, n)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("noop", payload, queue.In("plain"))
	}
	if _, err := client.EnqueueMany(ctx, tasks); err != nil {
		b.Fatal(err)
	}
	f.plainMem = float64(usedMemory(b, rdb)-m0) / n
	run(b, rdb, qcfg, insp, "plain", n)
	f.plainCPU = (redistest.CPU(b, rdb) - c0) * 1e6 / n

	// the graphs
	wfs := make([]*queue.Workflow, graphs)
	for i := range wfs {
		wf, err := graphshape.Build(shape, size, payload)
		if err != nil {
			b.Fatal(err)
		}
		wfs[i] = wf
	}
	m0, c0 = usedMemory(b, rdb), redistest.CPU(b, rdb)
	b.StartTimer()
	wkeys := make([]string, graphs)
	ids := make([]string, graphs)
	for i, wf := range wfs {
		id, err := client.EnqueueWorkflow(ctx, wf)
		if err != nil {
			b.Fatal(err)
		}
		ids[i], wkeys[i] = id, keys.Home(qcfg.Prefix, keys.HomeOf(id)).Workflow(id)
	}
	f.waitingMem = float64(usedMemory(b, rdb)-m0) / n
	if released := graphs * graphshape.Released(shape, size); released > 0 {
		// the roots run; their children are released, not run
		run(b, rdb, qcfg, insp, "root", int64(graphs))
		for {
			qi, err := insp.QueueInfo(ctx, "graph")
			if err != nil {
				b.Fatal(err)
			}
			if qi.Pending == int64(released) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		f.enqueuedMem = float64(usedMemory(b, rdb)-m0) / n
	}
	// the rest of the graphs; a cheap read of each workflow's state says
	// when it is done
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range wkeys {
			for {
				// a failed read (a pool busy with the workers' pops) is no answer
				// Redis still spells an active workflow "running", as 0.1.0 did
				if st, err := rdb.HGet(ctx, key, "state").Result(); err == nil && st != "running" {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	runUntil(b, rdb, qcfg, []string{"root", "graph"}, done)
	b.StopTimer()
	f.nodeCPU = (redistest.CPU(b, rdb) - c0) * 1e6 / n
	for _, id := range ids {
		wi, err := insp.GetWorkflow(ctx, id)
		if err != nil || wi.State != queue.StateSucceeded {
			b.Fatalf("workflow %s: %v, %v", id, wi.State, err)
		}
	}
	return f
}

// run processes n tasks of queue q with a no-op handler, then stops.
func run(b *testing.B, rdb *redis.Client, qcfg queue.Config, insp *queue.Inspector, q string, n int64) {
	var got atomic.Int64
	done := make(chan struct{})
	h := HandlerFunc(func(context.Context, *Task) error {
		if got.Add(1) == n {
			close(done)
		}
		return nil
	})
	s := benchServer(b, rdb, qcfg, []string{q}, h)
	<-done
	for { // the last acks
		qi, err := insp.QueueInfo(context.Background(), q)
		if err != nil || qi.Active == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_ = s.Shutdown(context.Background())
}

// runUntil serves queues with a no-op handler until done closes.
func runUntil(b *testing.B, rdb *redis.Client, qcfg queue.Config, queues []string, done <-chan struct{}) {
	s := benchServer(b, rdb, qcfg, queues, HandlerFunc(func(context.Context, *Task) error { return nil }))
	<-done
	_ = s.Shutdown(context.Background())
}

// benchServer starts a server on queues with the default Config but for
// its concurrency. WorkflowSweep stays at its default: a workflow on one
// server needs no sweep, and a sweep is work per second, not per node.
func benchServer(b *testing.B, rdb *redis.Client, qcfg queue.Config, queues []string, h Handler) *Server {
	cfg := Config{Config: qcfg, Concurrency: 16, Queues: map[string]int{}}
	for _, q := range queues {
		cfg.Queues[q] = 1
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(rdb, cfg, h)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}
