// Package examples_test runs every example as a user would, against a
// private Redis, and checks it exits cleanly and leaves no key behind.
package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
)

// TestExamples builds each example and runs it with REDIS_URL set to a
// redis-server of its own: it exits 0 within its bound and deletes its
// keys. One also runs with no Redis URL, starting its own server.
func TestExamples(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("*/main.go")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	bin := t.TempDir()
	for _, d := range dirs {
		name := filepath.Dir(d)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			exe := filepath.Join(bin, name)
			build := exec.Command("go", "build", "-o", exe, "./"+name)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			srv := redistest.Start(t)
			out := runExample(t, exe, "REDIS_URL=redis://"+srv.Addr)
			if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
				keys, _ := srv.Client(t).Keys(context.Background(), "*").Result()
				t.Fatalf("%s left %d keys: %v\noutput:\n%s", name, n, keys, out)
			}
		})
	}
	t.Run("PrivateRedis", func(t *testing.T) {
		t.Parallel()
		exe := filepath.Join(t.TempDir(), "producer-worker")
		if out, err := exec.Command("go", "build", "-o", exe, "./producer-worker").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		runExample(t, exe) // no REDIS_URL: its own redis-server, stopped at the end
	})
}

// runExample runs exe with env added to a scrubbed environment (no Redis
// URL of the caller's), at most two minutes, and returns its output.
func runExample(t *testing.T, exe string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Dir = ".." // the repository root, where a user runs them
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GOPATH=" + os.Getenv("GOPATH"), "GOCACHE=" + os.Getenv("GOCACHE"), "GOMODCACHE=" + os.Getenv("GOMODCACHE"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"), "GOPROXY=" + os.Getenv("GOPROXY")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", filepath.Base(exe), err, out)
	}
	return string(out)
}
