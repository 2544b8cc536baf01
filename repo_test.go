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
// docs/) points outside the repository but to this module's godoc:
// relative links resolve to files in it, and there are no links to other
// sites.
func TestREADMELinks(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md", "examples/README.md", "dashboard/API.md", "BENCHMARKS.md", "CONTRIBUTING.md", "CHANGELOG.md")
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
			if strings.HasPrefix(target, "https://pkg.go.dev/github.com/shardq/shardq") {
				continue // the godoc of this module
			}
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

// TestREADMEQuickstart: the README's program is examples/quickstart/main.go,
// byte for byte, so the program a new user copies is the one the examples
// test builds and runs.
func TestREADMEQuickstart(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n```go\n")
	if !ok {
		t.Fatal("the README has no Go block")
	}
	got, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the README's first Go block does not end")
	}
	if got+"\n" != string(want) {
		t.Fatalf("the README's first Go block differs from examples/quickstart/main.go:\n%s", lineDiff(string(want), got+"\n"))
	}
	if n := strings.Count(string(readme), "\n"); n > 260 {
		t.Errorf("the README has %d lines; it is a door, at most about 250", n)
	}
}

// TestNoLuaOutsideItsGuide: package lua is for users who build on the
// primitives; examples and the README never import it, and among the
// guides only docs/primitives.md does.
func TestNoLuaOutsideItsGuide(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("examples/*/*.go")
	guides, _ := filepath.Glob("docs/*.md")
	files = append(append(files, guides...), "README.md")
	for _, f := range files {
		if f == filepath.Join("docs", "primitives.md") || f == filepath.Join("docs", "ARCHITECTURE.md") {
			continue // the architecture doc is for contributors: it names lua's files
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"github.com/shardq/shardq/lua"`) || regexp.MustCompile(`\blua\.[A-Z]`).Match(b) {
			t.Errorf("%s uses package lua; only docs/primitives.md may", f)
		}
	}
}

// publicBudget bounds the lines of non-test Go of each public package
// that holds engine code still: the engine goes behind internal/ (issue
// 43, item 1), so moving an engine file's worth of code back into one of
// them fails TestEngineStaysInternal. Lower a budget when code moves out;
// raise one only in a commit that says why the code belongs there.
var publicBudget = map[string]int{"queue": 6940, "worker": 1800, "lua": 500}

// TestEngineStaysInternal: each public package of publicBudget holds at
// most its budget of non-test Go.
func TestEngineStaysInternal(t *testing.T) {
	t.Parallel()
	for pkg, budget := range publicBudget {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines += strings.Count(string(b), "\n")
		}
		if lines > budget {
			t.Errorf("%s/ holds %d lines of non-test Go, over its budget of %d: move engine code behind internal/ "+
				"(docs/ARCHITECTURE.md, Layers), or raise the budget in a commit that says why", pkg, lines, budget)
		}
	}
}
