// Command clients measures each producer client's enqueue rate from one
// producer, single and batched, against the Go client's, in one run on one
// private redis-server (issue 44; BENCHMARKS.md, "Clients in other
// languages"). The Python and TypeScript clients run their bench drivers
// (internal/crosslang/contract.md); the Go client runs in this process
// with the same loop. Rounds rotate the clients' order, each run starts
// from an empty server, and the figures are medians of the rounds.
//
//	cd bench && go run ./clients [-rounds 5] [-single 3000] [-batched 30000] [-batch 100]
//
// Run it alone: other load on the machine moves the figures. It needs
// /usr/bin/python3 with the client's Debian packages and clients/node
// built (cd clients/node && npm ci && npm run build).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds; each runs every client single and batched")
	single := flag.Int("single", 3000, "tasks of a single-enqueue run")
	batched := flag.Int("batched", 30000, "tasks of a batched run")
	batch := flag.Int("batch", 100, "tasks per batch")
	flag.Parse()
	if err := run(*rounds, *single, *batched, *batch); err != nil {
		fmt.Fprintln(os.Stderr, "clients:", err)
		os.Exit(1)
	}
}

// producer enqueues n tasks of 64 bytes, b at a time (1: single calls),
// and answers the seconds the loop took.
type producer struct {
	name string
	run  func(ctx context.Context, url string, n, b int) (float64, error)
}

// result is one run's figures.
type result struct {
	rate    float64 // tasks a second
	scripts float64 // script calls Redis ran per call (a batch, or a single task)
}

func run(rounds, single, batched, batch int) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	srv, err := redisproc.Start()
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ctx := context.Background()
	producers := []producer{
		{"Go", goProducer},
		{"Python", command(filepath.Join(root, "clients", "python"), "/usr/bin/python3", "bench.py")},
		{"TypeScript", command(filepath.Join(root, "clients", "node"), "node", "tools/node-zstd.mjs", "dist/bench.js")},
	}
	modes := []struct {
		name string
		n, b int
	}{{"single", single, 1}, {"batched", batched, batch}}
	got := map[string][]result{} // producer/mode -> rounds
	for r := range rounds {
		order := slices.Clone(producers)
		for range r % len(order) {
			order = append(order[1:], order[0])
		}
		for _, p := range order {
			for _, m := range modes {
				// the private server's: every run starts empty, with no stats
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					return err
				}
				before, err := scriptCalls(ctx, rdb)
				if err != nil {
					return err
				}
				secs, err := p.run(ctx, "redis://"+srv.Addr+"/0", m.n, m.b)
				if err != nil {
					return fmt.Errorf("%s %s: %w", p.name, m.name, err)
				}
				after, err := scriptCalls(ctx, rdb)
				if err != nil {
					return err
				}
				calls := float64(m.n / m.b)
				got[p.name+"/"+m.name] = append(got[p.name+"/"+m.name], result{
					rate: float64(m.n) / secs, scripts: float64(after-before) / calls,
				})
			}
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", r+1, rounds)
	}
	fmt.Printf("enqueue rate from one producer, medians of %d rounds (single: %d tasks; batched: %d tasks, %d a batch)\n", rounds, single, batched, batch)
	fmt.Printf("%-11s %-8s %12s %9s %14s\n", "client", "mode", "tasks/s", "vs Go", "scripts/call")
	for _, p := range producers {
		for _, m := range modes {
			rs := got[p.name+"/"+m.name]
			rate := median(rs, func(r result) float64 { return r.rate })
			goRate := median(got["Go/"+m.name], func(r result) float64 { return r.rate })
			fmt.Printf("%-11s %-8s %12.0f %8.2fx %14.2f\n", p.name, m.name, rate, rate/goRate,
				median(rs, func(r result) float64 { return r.scripts }))
		}
	}
	return nil
}

// goProducer is the Go client's loop, the drivers' twin.
func goProducer(ctx context.Context, url string, n, b int) (float64, error) {
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	c, err := queue.NewClient(rdb, queue.Config{Prefix: "bench"})
	if err != nil {
		return 0, err
	}
	payload := bytes.Repeat([]byte{'a'}, 64)
	task := queue.NewRawTask("bench", payload)
	if _, err := c.Enqueue(ctx, task, queue.In("q")); err != nil { // warm-up, not counted
		return 0, err
	}
	tasks := make([]*queue.Task, b)
	for i := range tasks {
		tasks[i] = task
	}
	start := time.Now()
	if b == 1 {
		for range n {
			if _, err := c.Enqueue(ctx, task, queue.In("q")); err != nil {
				return 0, err
			}
		}
	} else {
		for range n / b {
			if _, err := c.EnqueueMany(ctx, tasks, queue.In("q")); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start).Seconds(), nil
}

// command is a client's bench driver, run in dir.
func command(dir string, argv ...string) func(ctx context.Context, url string, n, b int) (float64, error) {
	return func(ctx context.Context, url string, n, b int) (float64, error) {
		args := append(slices.Clone(argv[1:]), "--url", url, "--prefix", "bench", "--queue", "q",
			"--tasks", strconv.Itoa(n), "--batch", strconv.Itoa(b))
		cmd := exec.CommandContext(ctx, argv[0], args...)
		cmd.Dir = dir
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.Bytes())
		}
		var res struct {
			Tasks   int     `json:"tasks"`
			Seconds float64 `json:"seconds"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Tasks != n || res.Seconds <= 0 {
			return 0, fmt.Errorf("%s printed %q (want %d tasks): %v", strings.Join(argv, " "), out.Bytes(), n, err)
		}
		return res.Seconds, nil
	}
}

// scriptCalls is the server's count of script calls so far (EVALSHA and
// EVAL, NOSCRIPT refusals included): the warm-up's few are in a run's
// count too, a rounding error over its calls.
func scriptCalls(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO commandstats: %q: %w", line, err)
		}
		n += c
	}
	return n, nil
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// repoRoot is the repository's root: bench's parent.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(strings.TrimSpace(string(out)))), nil
}
