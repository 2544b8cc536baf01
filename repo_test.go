// Package shardq_test holds tests of the repository itself: its Makefile
// and its documents. The library is in queue/, worker/ and dashboard/.
package shardq_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMakeFailsFastWithoutRedis: on a machine without redis-server (or
// Chromium), make test and make demo stop at once with one line naming
// the package to install, not later with a stack of test errors.
func TestMakeFailsFastWithoutRedis(t *testing.T) {
	t.Parallel()
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not found")
	}
	bin := t.TempDir() // a PATH with make and a shell, nothing else
	for name, p := range map[string]string{"make": makePath, "sh": "/bin/sh"} {
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, path string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, makePath, args...)
		cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		name, path string
		args       []string
		want       string
	}{
		{"TestNoRedis", bin, []string{"test"}, "test needs redis-server on PATH: apt-get install -y redis-server"},
		{"DemoNoRedis", bin, []string{"demo"}, "demo needs redis-server on PATH: apt-get install -y redis-server"},
		{"TestNoChromium", "", []string{"test"}, "apt-get install -y chromium"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "TestNoChromium" { // redis-server alone, no browser
				own := t.TempDir()
				if err := os.Symlink(redis, filepath.Join(own, "redis-server")); err != nil {
					t.Fatal(err)
				}
				c.path = bin + ":" + own
			}
			out, err := run(t, c.path, c.args...)
			if err == nil || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("make %s: %v, output:\n%s\nwant one line naming %q", strings.Join(c.args, " "), err, out, c.want)
			}
		})
	}
}

// TestREADMELinks: no link in the README (nor examples/README.md, nor
// docs/) points outside the repository: relative links resolve to files
// in it, and there are no links to other sites.
func TestREADMELinks(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md", "examples/README.md", "dashboard/API.md", "BENCHMARKS.md")
	// markdown links, and paths in code spans that climb out of a directory
	link := regexp.MustCompile("\\]\\(([^)\\s]+)\\)|`(\\.\\./[^`\\s]*)`")
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s: link %q leaves the repository", f, target)
				continue
			}
			if strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(f), target))
			if err != nil || !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s: link %q points outside the repository", f, target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %q: no such file in the repository", f, target)
			}
		}
	}
}
