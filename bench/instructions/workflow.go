package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/graphshape"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// graphNodes is the size of the graph, and of the plain batch beside it,
// as in worker's BenchmarkWorkflow.
const graphNodes = 10_000

// prefetch is the workers' worker.Config.Prefetch (-prefetch).
var prefetch int

// phase is the instructions per task or node of one phase of a workflow
// run.
type phase struct {
	name  string
	perOp float64
}

// workflowPhases runs, on one redis-server under callgrind, what worker's
// BenchmarkWorkflow runs for shape: 10,000 plain tasks (EnqueueMany, then
// processed) and a 10,000-node graph (recorded, then run to its end), with
// 100-byte payloads and a no-op handler at concurrency 16. Between phases
// callgrind_control dumps the counters, which resets them; each phase's
// total over 10,000 is its figure. A worker is started before each phase
// that runs tasks, so its start-up is outside the phase.
func workflowPhases(shape string) ([]phase, error) {
	dir, err := os.MkdirTemp("", "instructions-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "cg.out")
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out,
		"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start valgrind: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer rdb.Close()
	if err := waitPing(rdb, exited); err != nil {
		return nil, err
	}
	dump := func(label string) error {
		if b, err := exec.Command("callgrind_control", "-d", label, strconv.Itoa(cmd.Process.Pid)).CombinedOutput(); err != nil {
			return fmt.Errorf("callgrind_control: %v: %s", err, b)
		}
		return nil
	}
	if err := runPhases(rdb, shape, dump); err != nil {
		return nil, err
	}
	return readDumps(out)
}

// runPhases runs the plain tasks and the graph, calling dump after each
// phase with its name, and before the first with "start".
func runPhases(rdb *redis.Client, shape string, dump func(string) error) error {
	ctx := context.Background()
	cfg := queue.Config{Prefix: "ins"}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		return err
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		return err
	}
	payload := make([]byte, 100)
	// warm up the scripts and the queues' registrations
	warm := queue.NewWorkflow()
	warm.Add("warm", queue.NewRawTask("noop", payload, queue.In("plain")))
	if _, err := client.EnqueueWorkflow(ctx, warm); err != nil {
		return err
	}
	if err := process(ctx, rdb, cfg, insp, "plain", 1, nil); err != nil {
		return err
	}
	if err := dump("start"); err != nil {
		return err
	}
	tasks := make([]*queue.Task, graphNodes)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("noop", payload, queue.In("plain"))
	}
	if _, err := client.EnqueueMany(ctx, tasks); err != nil {
		return err
	}
	if err := dump("plain-enqueue"); err != nil {
		return err
	}
	if err := process(ctx, rdb, cfg, insp, "plain", graphNodes, func() error { return dump("plain-start") }); err != nil {
		return err
	}
	if err := dump("plain-run"); err != nil {
		return err
	}
	wf, err := graphshape.Build(shape, graphNodes, payload)
	if err != nil {
		return err
	}
	if graphshape.Released(shape, graphNodes) > 0 {
		if _, err := client.EnqueueWorkflow(ctx, wf); err != nil {
			return err
		}
		if err := dump("record"); err != nil {
			return err
		}
		if err := process(ctx, rdb, cfg, insp, "root", 1, func() error { return dump("root-start") }); err != nil {
			return err
		}
		if err := dump("release"); err != nil {
			return err
		}
		if err := process(ctx, rdb, cfg, insp, "graph", graphNodes-1, func() error { return dump("graph-start") }); err != nil {
			return err
		}
		return dump("run")
	}
	started := func() error {
		if err := dump("graph-start"); err != nil {
			return err
		}
		_, err := client.EnqueueWorkflow(ctx, wf)
		if err == nil {
			err = dump("record")
		}
		return err
	}
	if err := process(ctx, rdb, cfg, insp, "graph", graphNodes, started); err != nil {
		return err
	}
	return dump("run")
}

// process serves queue q with a no-op handler at concurrency 16 until n
// tasks ran and none is active. ready, when given, runs once the worker
// started: the phase begins there.
func process(ctx context.Context, rdb *redis.Client, cfg queue.Config, insp *queue.Inspector, q string, n int64, ready func() error) error {
	var ran atomic.Int64
	done := make(chan struct{})
	h := worker.HandlerFunc(func(context.Context, *worker.Task) error {
		if ran.Add(1) == n {
			close(done)
		}
		return nil
	})
	// WorkflowSweep at its default, as in BenchmarkWorkflow: a workflow on one
	// server needs no sweep
	wcfg := worker.Config{Config: cfg, Concurrency: 16, Queues: map[string]int{q: 1}, Prefetch: prefetch}
	wcfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := worker.NewServer(rdb, wcfg, h)
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	if ready != nil {
		if err := ready(); err != nil {
			return err
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Minute):
		return fmt.Errorf("queue %s: %d of %d tasks ran in 30 minutes", q, ran.Load(), n)
	}
	for { // the last acks
		qi, err := insp.QueueInfo(ctx, q)
		if err == nil && qi.Active == 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readDumps reads the dumps callgrind wrote next to out (out.1, out.2,
// ...), each opening with the label of the dump that ended it, and returns
// the instructions per task or node of each phase whose label names one.
func readDumps(out string) ([]phase, error) {
	files, err := filepath.Glob(out + ".*")
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return dumpIndex(files[i]) < dumpIndex(files[j]) })
	var phases []phase
	for _, f := range files {
		label, err := dumpLabel(f)
		if err != nil {
			return nil, err
		}
		total, err := totalInstructions(f)
		if err != nil {
			return nil, err
		}
		switch label {
		case "start", "plain-start", "root-start", "graph-start":
			continue // the warm-up, or a worker's start
		}
		phases = append(phases, phase{label, float64(total) / graphNodes})
	}
	if len(phases) == 0 {
		return nil, errors.New("callgrind wrote no dumps")
	}
	return phases, nil
}

func dumpIndex(f string) int {
	n, _ := strconv.Atoi(f[strings.LastIndexByte(f, '.')+1:])
	return n
}

// dumpLabel reads the "desc: Trigger: dump <label>" line.
func dumpLabel(f string) (string, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b[:min(len(b), 4096)]), "\n") {
		if v, ok := strings.CutPrefix(line, "desc: Trigger: dump "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no trigger line", f)
}
