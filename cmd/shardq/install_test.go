package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardq/shardq"
	"github.com/shardq/shardq/internal/redistest"
)

// repoURL is where the README and docs/cli.md clone shardq from; the
// install test clones this repository instead, as committed.
const repoURL = "https://github.com/shardq/shardq"

// TestInstallFromClone tries the README's Install section and docs/cli.md's
// opening block as a new operator would, on a fresh clone of this
// repository's HEAD: the README's clone-and-install line builds shardq
// into an empty GOBIN, `shardq version` names this version, and then
// every line of cli.md's opening runs as written in one shell, with the
// clone from this repository and SHARDQ_REDIS_URL at a private
// redis-server. The worker and dashboard lines, which serve until
// stopped, run in the background and must still be serving when the
// other lines are done; every other line must exit 0.
func TestInstallFromClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds shardq from a clone")
	}
	for _, tool := range []string{"git", "go", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	must(t, err)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("%s is not a git checkout", root)
	}
	dir := t.TempDir()
	gobin := filepath.Join(dir, "bin")
	// -trimpath: the second clone's build, at another path, is the first's
	env := append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=readonly -trimpath", "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))

	// the README's line, in a directory of its own
	install := codeBlockLine(t, filepath.Join(root, "README.md"), "## Install", "git clone "+repoURL)
	sh(t, filepath.Join(dir, "readme"), env, strings.Replace(install, repoURL, root+" shardq", 1))
	out, err := exec.Command(filepath.Join(gobin, "shardq"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "shardq "+shardq.Version) {
		t.Fatalf("shardq version: %v\n%s", err, out)
	}
	must(t, os.Remove(filepath.Join(gobin, "shardq")))

	// docs/cli.md's opening, as a script
	srv := redistest.Start(t)
	script := []string{"set -e"}
	var serving []string
	for _, l := range openingBlock(t, filepath.Join(root, "docs", "cli.md")) {
		switch {
		case strings.HasPrefix(l, "git clone "+repoURL):
			l = strings.Replace(l, repoURL, root+" shardq", 1)
		case strings.HasPrefix(l, "export SHARDQ_REDIS_URL="):
			l = "export SHARDQ_REDIS_URL=redis://" + srv.Addr
		case strings.HasPrefix(l, "shardq worker"), strings.HasPrefix(l, "shardq dashboard"):
			name := strings.Fields(l)[1]
			serving = append(serving, name)
			l += " > " + name + ".log 2>&1 & echo $! > " + name + ".pid"
			if name == "dashboard" {
				if portTaken("127.0.0.1:8080") { // as written it listens there
					t.Logf("127.0.0.1:8080 is taken: the dashboard line gets --addr 127.0.0.1:0")
					l = strings.Replace(l, " > ", " --addr 127.0.0.1:0 > ", 1)
				}
				l += "; while ! grep -q 'dashboard on http' " + name + ".log; do kill -0 $(cat " + name + ".pid) || exit 1; sleep 0.1; done"
			}
		}
		script = append(script, l)
	}
	if len(serving) != 2 || len(script) < 8 {
		t.Fatalf("docs/cli.md's opening block has changed shape: %q", script)
	}
	work := filepath.Join(dir, "cli")
	t.Cleanup(func() {
		for _, name := range serving {
			stop(t, filepath.Join(work, name+".pid"))
		}
	})
	sh(t, work, env, strings.Join(script, "\n"))
	for _, name := range serving {
		b, _ := os.ReadFile(filepath.Join(work, name+".pid"))
		pid := atoiOr(strings.TrimSpace(string(b)))
		if pid <= 0 || syscall.Kill(pid, 0) != nil {
			log, _ := os.ReadFile(filepath.Join(work, name+".log"))
			t.Fatalf("shardq %s stopped before the other lines were done:\n%s", name, log)
		}
	}
	log, err := os.ReadFile(filepath.Join(work, "dashboard.log"))
	must(t, err)
	_, addr, _ := strings.Cut(string(log), "dashboard on http://")
	addr, _, _ = strings.Cut(addr, "/")
	if !portTaken(addr) {
		t.Errorf("shardq dashboard does not listen on %q:\n%s", addr, log)
	}
}

// portTaken reports whether something accepts connections at addr.
func portTaken(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// sh runs script with sh -e in dir, made first, failing the test with
// its output when it fails.
func sh(t *testing.T, dir string, env []string, script string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ec", script)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	defer func() { t.Logf("%s: %v", dir, time.Since(start).Round(time.Millisecond)) }()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v:\n%s\noutput:\n%s", err, script, out)
	}
}

// stop sends SIGTERM to the process whose PID file is path, and waits for
// it to go, up to a minute.
func stop(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	pid := atoiOr(strings.TrimSpace(string(b)))
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("pid %d (%s) did not stop within a minute of SIGTERM", pid, path)
}

func atoiOr(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// codeBlockLine returns the line of a ```sh block under heading in file
// that starts with prefix.
func codeBlockLine(t *testing.T, file, heading, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	under := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			under = l == heading
		case under && strings.HasPrefix(l, prefix):
			return l
		}
	}
	t.Fatalf("%s has no line %q... under %q", file, prefix, heading)
	return ""
}

// openingBlock returns the commands of file's first ```sh block, a line
// continued with a backslash joined to the next, comments and blank
// lines left out.
func openingBlock(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	must(t, err)
	defer f.Close()
	var out []string
	in, cont := false, ""
	for s := bufio.NewScanner(f); s.Scan(); {
		l := s.Text()
		switch {
		case !in && l == "```sh":
			in = true
		case in && l == "```":
			return out
		case in && strings.HasSuffix(l, `\`):
			cont += strings.TrimSuffix(l, `\`)
		case in:
			l = strings.TrimSpace(cont + l)
			cont = ""
			if l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
	}
	t.Fatalf("%s has no ```sh block", file)
	return nil
}
