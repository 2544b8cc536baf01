package crosslang

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// requiredEnv makes a client whose tools are missing fail its test instead
// of skipping it. .ci/run sets it once it installed them.
const requiredEnv = "SHARDQ_CLIENTS_REQUIRED"

// matrixTimeout bounds one driver's whole run: its two commands and the
// worker's runs, a few seconds when nothing is wrong.
const matrixTimeout = 2 * time.Minute

// The cases every driver enqueues (contract.md).
var matrixCases = []string{"plain", "delayed", "fair", "compressed", "encrypted", "duplicate", "batch-0", "batch-1", "batch-2"}

// encryptedMarker is what the encrypted task's payload holds and no stored
// value may hold in clear.
const encryptedMarker = "XL-MARKER-ENCRYPTED"

// env is what a driver is given: a private redis-server and the options.
type env struct {
	URL, Prefix, Queue, KeyFile, Tag string
	Ring                             *queue.KeyRing
}

// config is the Go side's configuration: the key ring opens the
// encrypted task, and the others are plain by design.
func (e env) config() queue.Config {
	return queue.Config{Prefix: e.Prefix, KeyRing: e.Ring, AllowPlaintext: true}
}

// report is what a driver's enqueue answers.
type report struct {
	Tasks []struct {
		Case    string `json:"case"`
		ID      string `json:"id"`
		Payload []byte `json:"payload_base64"`
	} `json:"tasks"`
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

// readBack is a task as a driver's results read it.
type readBack struct {
	State  string `json:"state"`
	Result []byte `json:"result_base64"`
}

// driver is a producer of the matrix.
type driver interface {
	enqueue(ctx context.Context, t *testing.T, e env) report
	results(ctx context.Context, t *testing.T, e env, ids []string) map[string]readBack
}

// command is a driver that is a program of contract.md, run in Dir.
type command struct {
	Dir  string
	Argv []string
}

func (c command) enqueue(ctx context.Context, t *testing.T, e env) report {
	var r report
	c.run(ctx, t, e, "enqueue", nil, &r)
	return r
}

func (c command) results(ctx context.Context, t *testing.T, e env, ids []string) map[string]readBack {
	in, err := json.Marshal(map[string][]string{"ids": ids})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tasks map[string]readBack `json:"tasks"`
	}
	c.run(ctx, t, e, "results", in, &out)
	return out.Tasks
}

// run runs the driver's verb with stdin and decodes its stdout into out.
func (c command) run(ctx context.Context, t *testing.T, e env, verb string, stdin []byte, out any) {
	t.Helper()
	cmd := exec.CommandContext(ctx, c.Argv[0], append(slices.Clone(c.Argv[1:]), verb)...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(),
		"SHARDQ_REDIS_URL="+e.URL, "SHARDQ_PREFIX="+e.Prefix, "SHARDQ_QUEUE="+e.Queue,
		"SHARDQ_KEY_FILE="+e.KeyFile, "SHARDQ_CASE_TAG="+e.Tag)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(c.Argv, " "), verb, err, stderr.Bytes(), stdout.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s %s printed %q: %v\nstderr:\n%s", strings.Join(c.Argv, " "), verb, stdout.Bytes(), err, stderr.Bytes())
	}
}

// runMatrix runs d's cases with a Go worker on a private redis-server and
// checks what contract.md says: each task runs once with its payload, the
// markers are never stored in clear, the delayed task waits, the fair one
// keeps its group, and the results read back are the worker's.
func runMatrix(t *testing.T, tag string, d driver) {
	ctx, cancel := context.WithTimeout(context.Background(), matrixTimeout)
	defer cancel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ring := newRing(t)
	e := env{URL: "redis://" + srv.Addr + "/0", Prefix: redistest.Prefix(t), Queue: "xl", Tag: tag, Ring: ring}
	e.KeyFile = writeRing(t, ring)

	rep := d.enqueue(ctx, t, e)
	for _, c := range rep.Checks {
		if !c.OK {
			t.Errorf("driver's check %q failed: %s", c.Name, c.Detail)
		}
	}
	byCase := map[string]int{}
	want := map[string][]byte{} // id → payload
	for i, task := range rep.Tasks {
		byCase[task.Case] = i
		if _, dup := want[task.ID]; dup || task.ID == "" {
			t.Fatalf("case %s: ID %q is empty or listed twice", task.Case, task.ID)
		}
		want[task.ID] = task.Payload
	}
	for _, c := range matrixCases {
		if _, ok := byCase[c]; !ok {
			t.Fatalf("the driver reported no %q task; it reported %+v", c, rep.Tasks)
		}
	}
	if len(rep.Tasks) != len(matrixCases) {
		t.Fatalf("the driver reported %d tasks, want the %d cases %v", len(rep.Tasks), len(matrixCases), matrixCases)
	}

	// what is stored before any worker ran
	stored := func(b []byte) []string { return redistest.KeysHolding(t, rdb, "*", b) }
	if p := rep.Tasks[byCase["plain"]].Payload; len(stored(p)) == 0 {
		t.Errorf("the plain task's payload %q is stored nowhere", p)
	}
	if p := rep.Tasks[byCase["compressed"]].Payload; len(p) < 4096 || len(stored(p)) > 0 {
		t.Errorf("the compressed task's payload of %d bytes (want 4,096 or more) is stored as it is in %v", len(p), stored(p))
	}
	if p := rep.Tasks[byCase["encrypted"]].Payload; !bytes.Contains(p, []byte(encryptedMarker)) {
		t.Errorf("the encrypted task's payload %q does not hold %q", p, encryptedMarker)
	} else if held := stored([]byte(encryptedMarker)); len(held) > 0 {
		t.Errorf("the encrypted task's payload is stored in clear in %v", held)
	}
	insp, err := queue.NewInspector(rdb, e.config())
	if err != nil {
		t.Fatal(err)
	}
	infoOf := func(c string) *queue.TaskInfo {
		t.Helper()
		ti, err := insp.GetTask(ctx, e.Queue, rep.Tasks[byCase[c]].ID)
		if err != nil {
			t.Fatalf("the %s task: %v", c, err)
		}
		return ti
	}
	if ti := infoOf("delayed"); ti.State != queue.StateScheduled {
		t.Errorf("the delayed task is %s before any worker ran, want %s", ti.State, queue.StateScheduled)
	}
	if ti := infoOf("fair"); ti.Group != "tenant-a" {
		t.Errorf("the fair task's group is %q, want tenant-a", ti.Group)
	}

	rec := startWorker(ctx, t, srv, e)
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	waitUntil(ctx, t, "every task succeeded", func() bool {
		for _, id := range ids {
			ti, err := insp.GetTask(ctx, e.Queue, id)
			if err == nil && ti.State == queue.StateDead {
				t.Fatalf("task %s went to dead: %s", id, ti.LastError)
			}
			if err != nil || ti.State != queue.StateSucceeded {
				return false
			}
		}
		return true
	}, rec.String)

	got := d.results(ctx, t, e, ids)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, id := range ids {
		switch runs := rec.runs[id]; {
		case len(runs) != 1:
			t.Errorf("task %s ran %d times", id, len(runs))
		case !bytes.Equal(runs[0], want[id]):
			t.Errorf("task %s reached the handler with payload %q, its producer sent %q", id, runs[0], want[id])
		}
		if rb := got[id]; rb.State != string(queue.StateSucceeded) || !bytes.Equal(rb.Result, resultOf(id, want[id])) {
			t.Errorf("task %s read back as %s with result %q, want succeeded with %q", id, rb.State, rb.Result, resultOf(id, want[id]))
		}
	}
	for id := range rec.runs {
		if _, ok := want[id]; !ok {
			t.Errorf("task %s ran, but the producer did not report it", id)
		}
	}
	t.Logf("%s: %d tasks enqueued, %d ran once each", tag, len(ids), len(rec.runs))
}

// resultOf is the result the worker sets for task id with payload p.
func resultOf(id string, p []byte) []byte {
	sum := sha256.Sum256(p)
	b, _ := json.Marshal(struct {
		ID     string `json:"id"`
		SHA256 string `json:"sha256"`
	}{id, hex.EncodeToString(sum[:])})
	return b
}

// recorder counts each task's runs and keeps their payloads.
type recorder struct {
	mu   sync.Mutex
	runs map[string][][]byte
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("runs so far: %d tasks", len(r.runs))
}

// startWorker runs a Go worker for e's queue that answers echo tasks.
func startWorker(ctx context.Context, t *testing.T, rs *redistest.Server, e env) *recorder {
	rec := &recorder{runs: map[string][][]byte{}}
	mux := worker.NewMux()
	mux.HandleFunc("echo", func(ctx context.Context, task *worker.Task) error {
		rec.mu.Lock()
		rec.runs[task.ID] = append(rec.runs[task.ID], slices.Clone(task.Payload))
		rec.mu.Unlock()
		return task.SetResult(ctx, resultOf(task.ID, task.Payload))
	})
	cfg := worker.Config{
		Config: e.config(),
		Queues: map[string]int{e.Queue: 1},
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	// the worker's own client: a retried pop would delay tasks by a lease
	opts := rs.Options()
	opts.MaxRetries = -1
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	srv, err := worker.NewServer(rdb, cfg, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return rec
}

// newRing makes a key ring of two random keys, the second current.
func newRing(t *testing.T) *queue.KeyRing {
	ring := &queue.KeyRing{Current: "k2", Keys: map[string][]byte{}}
	for _, id := range []string{"k1", "k2"} {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		ring.Keys[id] = k
	}
	return ring
}

// writeRing writes ring in ParseKeyRing's JSON to a file of the test's.
func writeRing(t *testing.T, ring *queue.KeyRing) string {
	keys := map[string]string{}
	for id, k := range ring.Keys {
		keys[id] = base64.StdEncoding.EncodeToString(k)
	}
	b, err := json.Marshal(map[string]any{"current": ring.Current, "keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "keyring.json")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// waitUntil polls cond until it holds or ctx ends; detail says what was
// seen when it fails.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool, detail func() string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (%s)", what, ctx.Err(), detail())
		case <-tick.C:
		}
	}
}

// required reports whether a missing tool fails the test rather than
// skipping it.
func required() bool { return os.Getenv(requiredEnv) != "" }
