package upgrade_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// requiredEnv makes a missing git history fail the test instead of skipping
// it. .ci/run sets it once it made sure the clone has the history.
const requiredEnv = "SHARDQ_UPGRADE_TEST_REQUIRED"

// buildTimeout bounds extracting and building the old programs: about 20s
// on two busy cores, minutes only with a cold build cache.
const buildTimeout = 4 * time.Minute

// runTimeout bounds running the producer and every task it enqueued, about
// 2s.
const runTimeout = time.Minute

// TestUpgradeFrom010 enqueues with a producer built from release 0.1.0's
// tree and runs everything with the current worker: what operations.md
// promises when workers are upgraded after 0.1.0 producers ran.
func TestUpgradeFrom010(t *testing.T) {
	t.Parallel()
	producer := programs(t, "0.1.0").Producer

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	srv := redistest.Start(t)
	var flows struct {
		Chain    string   `json:"chain"`
		Batch    string   `json:"batch"`
		Graph    string   `json:"graph"`
		Children []string `json:"children"`
	}
	out := runCommand(ctx, t, "", nil, producer, srv.Addr)
	if err := json.Unmarshal(out, &flows); err != nil {
		t.Fatalf("producer output %q: %v", out, err)
	}

	rdb := srv.Client(t)
	// the worker's own client: a retried pop would delay tasks by a lease
	wopts := srv.Options()
	wopts.MaxRetries = -1
	wrdb := redis.NewClient(wopts)
	t.Cleanup(func() { _ = wrdb.Close() })
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	qcfg := queue.Config{Logger: logger}

	// A 0.1.0 producer's TaskID claim holds for a current producer.
	client, err := queue.NewClient(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	dup := queue.NewRawTask("full", []byte("duplicate"), queue.In("compat"), queue.TaskID("upgrade-claimed-1"))
	if _, err := client.Enqueue(ctx, dup); !errors.Is(err, queue.ErrDuplicateTaskID) {
		t.Fatalf("Enqueue of the ID a 0.1.0 producer claimed: %v, want ErrDuplicateTaskID", err)
	}

	rec := newRecorder()
	stop := startWorker(ctx, t, wrdb, worker.Config{
		Config:      qcfg,
		Concurrency: 4,
		Queues:      map[string]int{"compat": 1, "compat_b": 1},
	}, rec.mux(t))

	want := expectedRuns()
	rec.waitFor(ctx, t, func() bool { return len(rec.missing(want)) == 0 }, "every task the 0.1.0 producer enqueued to run",
		func() string { return "missing runs:\n" + strings.Join(rec.missing(want), "\n") })
	insp, err := queue.NewInspector(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor(ctx, t, func() bool { return queuesIdle(ctx, t, insp) }, "both queues to be empty", rec.runsSoFar)
	stop()

	rec.check(t, want)
	checkFlows(ctx, t, rdb, qcfg.Prefix, insp, flows.Chain, flows.Batch, flows.Graph, flows.Children)
}

// expectedRuns lists every run the producer's tasks should cause, as
// "type payload", each exactly once.
func expectedRuns() []string {
	var runs []string
	add := func(typ string, payloads ...string) {
		for _, p := range payloads {
			runs = append(runs, typ+" "+p)
		}
	}
	add("plain", "0", "1", "2", "3", "4")
	add("full", "headers", "key-a1", "key-a2", "key-b1", "later", "claimed", "timeout")
	add("typed", "seven")
	add("many", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	add("chain", "1", "2", "3")
	add("batch", "0", "1", "2", "3", "4")
	add("batch:success", "batch")
	add("batch:complete", "batch")
	add("graph", "a0", "a1", "b0", "b1", "root0")
	add("graph:success", "a", "b", "root")
	add("graph:complete", "a", "b", "root")
	slices.Sort(runs)
	return runs
}

// run is one handler call: when it started and ended, in a sequence shared
// by all handlers, so that the test can order runs without clocks.
type run struct {
	key        string
	start, end int
}

// recorder records every handler call and wakes waiters after each.
type recorder struct {
	mu      sync.Mutex
	seq     int
	runs    []run
	wake    chan struct{}
	results map[string][]byte // the chain's PreviousResult seen by each link
	errs    []string
}

func newRecorder() *recorder {
	return &recorder{wake: make(chan struct{}, 1), results: map[string][]byte{}}
}

func (r *recorder) mux(t *testing.T) *worker.Mux {
	m := worker.NewMux()
	for _, typ := range []string{"plain", "full", "many", "batch", "batch:success", "batch:complete", "graph", "graph:success", "graph:complete"} {
		m.HandleFunc(typ, func(ctx context.Context, task *worker.Task) error {
			return r.do(task, string(task.Payload), func() error {
				if string(task.Payload) == "headers" && task.Headers["trace"] != "abc" {
					return fmt.Errorf("headers %v, want trace=abc", task.Headers)
				}
				return nil
			})
		})
	}
	m.HandleFunc("typed", func(ctx context.Context, task *worker.Task) error {
		var v struct {
			N    int
			Name string
		}
		if err := task.Decode(&v); err != nil {
			return r.do(task, "undecodable", func() error { return err })
		}
		return r.do(task, v.Name, func() error {
			if v.N != 7 {
				return fmt.Errorf("typed N = %d, want 7", v.N)
			}
			return nil
		})
	})
	m.HandleFunc("chain", func(ctx context.Context, task *worker.Task) error {
		prev, err := task.PreviousResult(ctx)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.results[string(task.Payload)] = prev
		r.mu.Unlock()
		if err := task.SetResult(ctx, []byte("r"+string(task.Payload))); err != nil {
			return err
		}
		return r.do(task, string(task.Payload), nil)
	})
	return m
}

// do records the call of task under payload p around fn. A failed check
// is recorded rather than returned, so the task does not retry and the
// test reports it.
func (r *recorder) do(task *worker.Task, p string, fn func() error) error {
	r.mu.Lock()
	r.seq++
	start := r.seq
	r.mu.Unlock()
	var err error
	if fn != nil {
		err = fn()
	}
	r.mu.Lock()
	r.seq++
	r.runs = append(r.runs, run{key: task.Type + " " + p, start: start, end: r.seq})
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s %s: %v", task.Type, p, err))
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// missing returns the runs of want that did not happen yet.
func (r *recorder) missing(want []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, x := range r.runs {
		seen[x.key] = true
	}
	var m []string
	for _, w := range want {
		if !seen[w] {
			m = append(m, w)
		}
	}
	return m
}

// runsSoFar lists the runs that happened, sorted.
func (r *recorder) runsSoFar() string {
	r.mu.Lock()
	var got []string
	for _, x := range r.runs {
		got = append(got, x.key)
	}
	r.mu.Unlock()
	slices.Sort(got)
	return "runs so far:\n" + strings.Join(got, "\n")
}

// waitFor waits until cond holds, rechecking after each handler call and
// every 50ms (queue counts change without a call), until ctx ends; then
// it fails with what detail says.
func (r *recorder) waitFor(ctx context.Context, t *testing.T, cond func() bool, what string, detail func() string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; %s", what, detail())
		case <-r.wake:
		case <-tick.C:
		}
	}
}

// check asserts each wanted run happened exactly once, nothing else ran,
// and the flows ran in their order.
func (r *recorder) check(t *testing.T, want []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Error(e)
	}
	var got []string
	byKey := map[string]run{}
	for _, x := range r.runs {
		got = append(got, x.key)
		byKey[x.key] = x
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("runs:\n%s\nwant each once:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	before := func(a, b string) {
		t.Helper()
		if byKey[a].end >= byKey[b].start {
			t.Errorf("%q started before %q ended", b, a)
		}
	}
	before("chain 1", "chain 2")
	before("chain 2", "chain 3")
	if p := string(r.results["2"]); p != "r1" {
		t.Errorf("chain link 2 read previous result %q, want r1", p)
	}
	if p := string(r.results["3"]); p != "r2" {
		t.Errorf("chain link 3 read previous result %q, want r2", p)
	}
	for i := range 5 {
		before(fmt.Sprintf("batch %d", i), "batch:success batch")
		before(fmt.Sprintf("batch %d", i), "batch:complete batch")
	}
	for _, child := range []string{"a", "b"} {
		for _, cb := range []string{"graph:success ", "graph:complete "} {
			before("graph "+child+"0", cb+child)
			before("graph "+child+"1", cb+child)
			// the parent's callbacks run after the child's
			before("graph:success "+child, cb+"root")
			before("graph:complete "+child, cb+"root")
		}
	}
	before("graph root0", "graph:success root")
	before("graph root0", "graph:complete root")
}

// queuesIdle reports whether both queues hold no task in any state.
func queuesIdle(ctx context.Context, t *testing.T, insp *queue.Inspector) bool {
	infos, err := insp.QueueInfos(ctx, "compat", "compat_b")
	if err != nil {
		if ctx.Err() == nil {
			t.Logf("QueueInfos: %v", err)
		}
		return false
	}
	for _, qi := range infos {
		if qi.Pending+qi.Active+qi.Scheduled+qi.Retry+qi.Dead != 0 {
			return false
		}
	}
	return true
}

// checkFlows reads the 0.1.0 producer's flows with the current Inspector;
// its chain, which no Inspector reads since chains are workflows, from the
// record 0.1.0 wrote, which the current scripts keep moving.
func checkFlows(ctx context.Context, t *testing.T, rdb redis.UniversalClient, prefix string, insp *queue.Inspector, chainID, batchID, graphID string, children []string) {
	t.Helper()
	chain := keys.Home(cmp.Or(prefix, config.DefaultPrefix), keys.HomeOf(chainID)).Chain(chainID)
	f, err := rdb.HMGet(ctx, chain, "state", "n", "s:1", "s:2", "s:3").Result()
	if err != nil {
		t.Fatalf("read chain %s: %v", chainID, err)
	}
	if fmt.Sprint(f) != "[done 3 s s s]" {
		t.Errorf("chain %s: state, links and their states %v, want [done 3 s s s]", chainID, f)
	}
	// each batch reads as the workflow a batch is since: its members
	// (tasks, or a nested batch's taskless node), its gate .close and
	// its two callbacks, whose parents are every other node, every one
	// succeeded
	members := map[string]int{batchID: 5, graphID: 3}
	for _, c := range children {
		members[c] = 2
	}
	for _, id := range append([]string{batchID, graphID}, children...) {
		wi, err := insp.GetWorkflow(ctx, id)
		if err != nil {
			t.Fatalf("GetWorkflow %s: %v", id, err)
		}
		n := members[id] + 3
		if wi.State != queue.StateSucceeded || wi.Total != n || len(wi.Nodes) != n || wi.Counts[queue.StateSucceeded] != n ||
			wi.Edges != 2*(members[id]+1) || wi.FinishedAt.IsZero() || wi.CreatedAt.IsZero() {
			t.Errorf("batch %s: %s, %d nodes (%d read), %d edges, counts %v, finished at %v; want succeeded, %d nodes, all succeeded",
				id, wi.State, wi.Total, len(wi.Nodes), wi.Edges, wi.Counts, wi.FinishedAt, n)
		}
		for _, nd := range wi.Nodes {
			taskless := nd.Name == ".close" || slices.Contains(children, keys.LongID(nd.Name[1:]))
			if nd.State != queue.StateSucceeded || !strings.HasPrefix(nd.Name, ".") || (nd.TaskID == "") != taskless {
				t.Errorf("batch %s: node %+v", id, nd)
			}
		}
		for _, cb := range []string{".on-success", ".on-complete"} {
			if c := wi.Node(cb); c == nil || len(c.Parents) != members[id]+1 {
				t.Errorf("batch %s: callback %s: %+v, want one with the gate and the members as parents", id, cb, c)
			}
		}
		sum, err := insp.WorkflowSummary(ctx, id)
		if err != nil || sum.State != wi.State || sum.Total != wi.Total || fmt.Sprint(sum.Counts) != fmt.Sprint(wi.Counts) || len(sum.Nodes) != 3 {
			t.Errorf("batch %s: summary %+v (%v), want the workflow's state and counts, and its gate and callbacks", id, sum, err)
		}
	}
	if wi, err := insp.GetWorkflow(ctx, batchID); err != nil || wi.Description != "upgrade batch" || wi.Parent != "" {
		t.Errorf("batch %s: %+v (%v), want its description and no parent", batchID, wi, err)
	}
	for _, c := range children {
		wi, err := insp.GetWorkflow(ctx, c)
		if err != nil {
			t.Fatalf("GetWorkflow %s: %v", c, err)
		}
		if wi.Parent != graphID {
			t.Errorf("child batch %s: parent %q, want %s", c, wi.Parent, graphID)
		}
	}
}

// repoRoot returns the directory of this module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/shardq/shardq\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/shardq/shardq above the test's directory")
		}
		dir = parent
	}
}

// releaseCommit returns the commit that CHANGELOG.md names for version:
// the "Released as commit X." line under its heading.
func releaseCommit(t *testing.T, root, version string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := "## [" + version + "] - "
	commitLine := regexp.MustCompile(`^Released as commit ([0-9a-f]{7,40})\.`)
	inVersion := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, heading):
			inVersion = true
		case strings.HasPrefix(line, "## "):
			inVersion = false
		case inVersion:
			if m := commitLine.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("CHANGELOG.md has no %q heading followed by a \"Released as commit X.\" line", heading)
	return ""
}

// requireHistory skips the test when the clone lacks the release's commit
// because it is shallow or not a git repository, unless requiredEnv is
// set. A full clone without the commit fails.
func requireHistory(t *testing.T, root, commit string) {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		msg := why + "; the upgrade test needs the history up to " + commit + " (git fetch --unshallow)"
		if os.Getenv(requiredEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("git"); err != nil {
		missing("git is not installed")
	}
	shallow, err := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output()
	if err != nil {
		missing("the source tree is not a git clone")
	}
	if exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() == nil {
		return
	}
	if strings.TrimSpace(string(shallow)) == "true" {
		missing("this is a shallow clone without commit " + commit)
	}
	t.Fatalf("CHANGELOG.md names commit %s, which is not in this clone's history", commit)
}

// runCommand runs name with args in dir and returns its standard output;
// it fails the test with the standard error on failure.
func runCommand(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	out, err := command(ctx, dir, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untar writes the regular files and directories of a tar archive under
// dir.
func untar(archive []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, dir+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(name, b, os.FileMode(h.Mode)&0o755|0o644); err != nil {
				return err
			}
		}
	}
}
