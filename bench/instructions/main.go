// Command instructions counts the user-space instructions redis-server runs
// per single Enqueue, for shardq and for asynq: for each system it starts a
// private redis-server under valgrind's callgrind twice, enqueues 10
// warm-up tasks and then n1 (or n3) tasks of 100 bytes one by one, stops the
// server and reads callgrind's total. (total(n3) - total(n1)) / (n3 - n1) is
// the figure per call: start-up, warm-up and script loading cancel out.
// With -batch B each call is an EnqueueMany of B tasks and the figure is
// per task: the Redis side of coalesced enqueues, what many producers at
// once send. With -workflow it counts, per phase, what a workflow node
// costs against a plain task instead (workflow.go).
// Instruction counts do not drift with the machine's load as times do, so
// two builds compare run to run. It needs valgrind (apt-get install -y
// valgrind) and is not part of CI.
//
//	cd bench && go run ./instructions
//	cd bench && go run ./instructions -workflow fan-out,layers
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
)

func main() {
	n1 := flag.Int("n1", 1000, "enqueues of the first run")
	n3 := flag.Int("n3", 3000, "enqueues of the second run")
	systems := flag.String("systems", "shardq,asynq", "comma-separated: shardq, asynq")
	shapes := flag.String("workflow", "", "comma-separated workflow shapes (fan-out, fan-in, layers): count a workflow node's instructions against a plain task's instead")
	flag.IntVar(&batch, "batch", 1, "tasks per call: above 1, shardq's calls are EnqueueMany of this many, and the figure is per task")
	flag.IntVar(&prefetch, "prefetch", 0, "with -workflow: the workers' Prefetch (0: its default; -1: none, what slow handlers get)")
	flag.Parse()
	if *shapes != "" {
		for _, shape := range strings.Split(*shapes, ",") {
			phases, err := workflowPhases(shape)
			if err != nil {
				log.Fatalf("workflow %s: %v", shape, err)
			}
			var plain, node float64
			var parts []string
			for _, p := range phases {
				if strings.HasPrefix(p.name, "plain-") {
					plain += p.perOp
				} else {
					node += p.perOp
				}
				parts = append(parts, fmt.Sprintf("%s %.1f", p.name, p.perOp/1000))
			}
			fmt.Printf("workflow %s: %.1f thousand redis-server instructions per node, %.2fx a plain task's %.1f (%s)\n",
				shape, node/1000, node/plain, plain/1000, strings.Join(parts, ", "))
		}
		return
	}
	if *n3 <= *n1 {
		log.Fatalf("n3 (%d) must be above n1 (%d)", *n3, *n1)
	}
	if batch > 1 && *systems != "shardq" {
		log.Fatalf("-batch counts shardq's EnqueueMany: want -systems shardq, not %q", *systems)
	}
	for _, sys := range strings.Split(*systems, ",") {
		enqueue, ok := workloads[sys]
		if !ok {
			log.Fatalf("unknown system %q: want shardq or asynq", sys)
		}
		a, err := measure(enqueue, *n1)
		if err != nil {
			log.Fatalf("%s, %d enqueues: %v", sys, *n1, err)
		}
		b, err := measure(enqueue, *n3)
		if err != nil {
			log.Fatalf("%s, %d enqueues: %v", sys, *n3, err)
		}
		if batch > 1 {
			fmt.Printf("%s: %d redis-server instructions per task in EnqueueMany calls of %d (totals %d and %d after %d and %d calls)\n",
				sys, (b-a)/int64((*n3-*n1)*batch), batch, a, b, *n1, *n3)
			continue
		}
		fmt.Printf("%s: %d redis-server instructions per single Enqueue (totals %d and %d after %d and %d calls)\n",
			sys, (b-a)/int64(*n3-*n1), a, b, *n1, *n3)
	}
}

// batch is -batch: the tasks of each of shardq's calls.
var batch int

// workloads enqueue n tasks one by one at addr, or with -batch n calls of
// batch tasks.
var workloads = map[string]func(addr string, n int) error{
	"shardq": func(addr string, n int) error {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		c, err := queue.NewClient(rdb, queue.Config{Prefix: "ins"})
		if err != nil {
			return err
		}
		p := make([]byte, 100)
		if batch > 1 {
			tasks := make([]*queue.Task, batch)
			for range n {
				for i := range tasks {
					tasks[i] = queue.NewRawTask("bench", p)
				}
				if _, err := c.EnqueueMany(context.Background(), tasks, queue.In("q")); err != nil {
					return err
				}
			}
			return nil
		}
		for range n {
			if _, err := c.Enqueue(context.Background(), queue.NewRawTask("bench", p), queue.In("q")); err != nil {
				return err
			}
		}
		return nil
	},
	"asynq": func(addr string, n int) error {
		c := asynq.NewClient(asynq.RedisClientOpt{Addr: addr})
		defer c.Close()
		p := make([]byte, 100)
		for range n {
			if _, err := c.Enqueue(asynq.NewTask("bench", p), asynq.Queue("q")); err != nil {
				return err
			}
		}
		return nil
	},
}

// measure runs 10 + n enqueues against a redis-server under callgrind and
// returns the instructions it ran in all.
func measure(enqueue func(addr string, n int) error, n int) (int64, error) {
	dir, err := os.MkdirTemp("", "instructions-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out,
		"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start valgrind: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := waitPing(rdb, exited); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	if err := enqueue(addr, 10+n); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	_ = rdb.Do(context.Background(), "SHUTDOWN", "NOSAVE").Err() // its reply is the closed connection
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		return 0, errors.New("redis-server did not exit within a minute of SHUTDOWN")
	}
	return totalInstructions(out)
}

// waitPing waits up to a minute (valgrind starts slowly) for PONG.
func waitPing(rdb *redis.Client, exited <-chan error) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if rdb.Ping(context.Background()).Err() == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server under valgrind exited: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("redis-server under valgrind did not answer PING within a minute")
}

// totalInstructions reads the "summary:" (or "totals:") line of a callgrind
// output file.
func totalInstructions(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for _, prefix := range []string{"summary:", "totals:"} {
			if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no summary line", path)
}

// freePort returns a TCP port free on loopback now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
