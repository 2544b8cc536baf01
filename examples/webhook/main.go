// Command webhook feeds a webhook from a queue with the shardq binary's
// built-in http handler, no Go handler involved: it starts a receiver on
// a loopback port, enqueues three notifications, and runs
//
//	shardq worker --queues webhooks --json --handler 'notify=http:http://127.0.0.1:PORT/hook'
//
// which POSTs each task's payload, as JSON, to the receiver. The receiver
// answers 200 (done), 503 with Retry-After once (retried a second later)
// and 422 (dead at once). Then it stops the worker with SIGTERM, as an
// operator would, and prints each task's final state.
//
//	go run ./examples/webhook
//
// It runs $SHARDQ_BIN, else shardq on PATH (go install
// github.com/shardq/shardq/cmd/shardq@latest), else builds ./cmd/shardq
// (run it from the repository's root for that).
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-webhook", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardq/shardq/queue"
)

// Notification is the payload; the receiver gets it as JSON.
type Notification struct {
	User  string `msgpack:"user"`
	Event string `msgpack:"event"`
}

func main() {
	ctx := context.Background()
	redisURL := cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379")
	rdb, err := queue.NewRedisClient(redisURL)
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-webhook"}

	// The receiver: what a webhook endpoint sees.
	var mu sync.Mutex
	calls := map[string]int{} // per task ID
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls[r.Header.Get("X-Shardq-Task-Id")]++
		first := calls[r.Header.Get("X-Shardq-Task-Id")] == 1
		mu.Unlock()
		status := http.StatusOK
		if strings.Contains(string(body), "bogus") {
			status = http.StatusUnprocessableEntity
		} else if strings.Contains(string(body), "bob") && first {
			w.Header().Set("Retry-After", "1")
			status = http.StatusServiceUnavailable
		}
		fmt.Printf("hook: %s attempt %s %s %s -> %d\n", r.Header.Get("X-Shardq-Task-Id"),
			r.Header.Get("X-Shardq-Attempt"), r.Header.Get("Content-Type"), body, status)
		w.WriteHeader(status)
	}))
	hook := "http://" + ln.Addr().String() + "/hook"

	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	var ids []string
	for _, n := range []Notification{{"ann", "signup"}, {"bob", "signup"}, {"cyd", "bogus"}} {
		task, err := queue.NewTask("notify", n, queue.In("webhooks"), queue.Retention(time.Hour))
		if err != nil {
			log.Fatal(err)
		}
		info, err := client.Enqueue(ctx, task)
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, info.ID)
	}

	bin, cleanup, err := shardqBinary()
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	args := []string{"worker", "--redis", redisURL, "--prefix", cfg.Prefix, "--queues", "webhooks", "--json",
		"--handler", "notify=http:" + hook}
	fmt.Printf("running: shardq %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}

	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	states := waitFinished(ctx, insp, ids)
	_ = cmd.Process.Signal(syscall.SIGTERM) // graceful shutdown
	if err := cmd.Wait(); err != nil {
		log.Fatalf("worker: %v", err)
	}
	fmt.Println("worker stopped gracefully (exit 0)")
	for _, s := range states {
		fmt.Println(s)
	}
}

// waitFinished waits until every task is done or dead and describes each.
func waitFinished(ctx context.Context, insp *queue.Inspector, ids []string) []string {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var out []string
		for _, id := range ids {
			ti, err := insp.GetTask(ctx, "webhooks", id)
			if err != nil || (ti.State != queue.StateSucceeded && ti.State != queue.StateDead) {
				break // not yet (or moving between states)
			}
			out = append(out, fmt.Sprintf("task %s: %s after %d attempt(s); last error: %q", id, ti.State, ti.Attempts, ti.LastError))
		}
		if len(out) == len(ids) {
			return out
		}
	}
	log.Fatal("the tasks did not finish within 20s")
	return nil
}

// shardqBinary returns $SHARDQ_BIN, else shardq on PATH (go install
// github.com/shardq/shardq/cmd/shardq@latest), else builds cmd/shardq of
// this checkout into a temporary directory that cleanup removes.
func shardqBinary() (bin string, cleanup func(), err error) {
	if bin := os.Getenv("SHARDQ_BIN"); bin != "" {
		return bin, func() {}, nil
	}
	if bin, err := exec.LookPath("shardq"); err == nil {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "shardq-example")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, "shardq")
	build := exec.Command("go", "build", "-C", "cmd/shardq", "-o", bin, ".") // its own module
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build shardq (run from the repository's root, or set SHARDQ_BIN): %w", err)
	}
	return bin, cleanup, nil
}
