// Package examples_test runs every example as a user would: built with go
// build, run from the repository's root with REDIS_URL pointing at a
// redis-server of its own.
package examples_test

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/redistest"
)

// TestExamples builds each example and runs it against a redis-server of
// its own. Every example but the quickstart exits 0 by itself within its
// bound; the quickstart runs until SIGINT, then exits 0. Each keeps its
// keys under its own prefix, and none imports a package under internal/,
// so a user can copy it out of the repository.
func TestExamples(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("*/main.go")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	bin := t.TempDir()
	// The webhook example runs the shardq binary: built once here, from
	// its own module, and handed over in SHARDQ_BIN.
	shardq := filepath.Join(bin, "shardq")
	if out, err := exec.Command("go", "build", "-C", "../cmd/shardq", "-o", shardq, ".").CombinedOutput(); err != nil {
		t.Fatalf("build shardq: %v\n%s", err, out)
	}
	for _, d := range dirs {
		name := filepath.Dir(d)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prefix := checkSource(t, d)
			exe := filepath.Join(bin, "example-"+name)
			if out, err := exec.Command("go", "build", "-o", exe, "./"+name).CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			srv := redistest.Start(t)
			env := []string{"REDIS_URL=redis://" + srv.Addr, "SHARDQ_BIN=" + shardq}
			var out string
			if name == "quickstart" {
				out = runUntilInterrupted(t, exe, "sending a welcome email to ann@example.com", env...)
			} else {
				out = runExample(t, exe, env...)
			}
			keys, err := srv.Client(t).Keys(context.Background(), "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if !strings.HasPrefix(k, prefix+":") && !strings.HasPrefix(k, "{"+prefix+":") {
					t.Errorf("key %q is not under the example's prefix %q", k, prefix)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// checkSource checks the example's imports and package comment, and
// returns the key prefix it sets (queue.Config.Prefix), else the default.
func checkSource(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if p := strings.Trim(imp.Path.Value, `"`); strings.Contains(p+"/", "/internal/") {
			t.Errorf("%s imports %s: a copy out of the repository would not build", path, p)
		}
	}
	const connects = "It connects to $REDIS_URL, by default redis://localhost:6379."
	if doc := f.Doc.Text(); !strings.Contains(strings.Join(strings.Fields(doc), " "), connects) {
		t.Errorf("%s: the package comment does not say %q", path, connects)
	}
	if m := regexp.MustCompile(`Prefix:\s*"([^"]+)"`).FindSubmatch(src); m != nil {
		return string(m[1])
	}
	return config.DefaultPrefix
}

// command returns exe to run from the repository's root, where a user runs
// the examples, with env added to a scrubbed environment: no Redis URL of
// the caller's leaks in.
func command(ctx context.Context, exe string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, exe)
	cmd.Dir = ".."
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GOPATH=" + os.Getenv("GOPATH"), "GOCACHE=" + os.Getenv("GOCACHE"), "GOMODCACHE=" + os.Getenv("GOMODCACHE"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"), "GOPROXY=" + os.Getenv("GOPROXY")}, env...)
	return cmd
}

// runExample runs exe, which must exit 0 by itself within two minutes,
// and returns its output.
func runExample(t *testing.T, exe string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := command(ctx, exe, env...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", filepath.Base(exe), err, out)
	}
	return string(out)
}

// runUntilInterrupted starts exe, which runs until a signal, waits until
// its output shows want (within two minutes), then sends it SIGINT: it
// must exit 0 within 30s. It returns the output.
func runUntilInterrupted(t *testing.T, exe, want string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := &watchedOutput{want: []byte(want), seen: make(chan struct{})}
	cmd := command(ctx, exe, env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-out.seen:
	case err := <-exited:
		t.Fatalf("%s exited (%v) before its output showed %q; output:\n%s", filepath.Base(exe), err, want, out)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("%s after SIGINT: %v\noutput:\n%s", filepath.Base(exe), err, out)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s did not exit within 30s of SIGINT; output:\n%s", filepath.Base(exe), out)
	}
	return out.String()
}

// watchedOutput collects a process's output and closes seen once it
// contains want.
type watchedOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want []byte
	seen chan struct{}
	done bool
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && bytes.Contains(w.buf.Bytes(), w.want) {
		w.done = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
