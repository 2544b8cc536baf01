package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain removes the old programs built for the tests once they all ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if old.dir != "" {
		_ = os.RemoveAll(old.dir)
	}
	os.Exit(code)
}

// oldPrograms are the programs built from a released tree: they are built
// once per test binary, as extracting and compiling the tree is most of a
// test's time (about 20s on two busy cores).
type oldPrograms struct {
	Producer string // producerSource
	Feeder   string // feederSource
	Worker   string // workerSource
}

// old holds the one build of the binary: every test that needs the old
// programs waits for it and shares its result, or its error.
var old struct {
	once  sync.Once
	dir   string // removed by TestMain
	progs oldPrograms
	err   error
}

// programs returns the programs built from version's tree, building them
// at the first call. It skips or fails the test as requireHistory does
// when the clone lacks the release's commit.
func programs(t *testing.T, version string) oldPrograms {
	t.Helper()
	root := repoRoot(t)
	commit := releaseCommit(t, root, version)
	requireHistory(t, root, commit)
	old.once.Do(func() {
		start := time.Now()
		old.progs, old.err = buildOld(root, commit)
		if old.err == nil {
			t.Logf("built the %s programs in %v", commit, time.Since(start).Round(time.Millisecond))
		}
	})
	if old.err != nil {
		t.Fatal(old.err)
	}
	return old.progs
}

// buildOld extracts commit's tree into a temporary directory, writes the
// programs into it and builds them with that tree's go.mod, in one go
// build so that they share its compiled packages.
func buildOld(root, commit string) (oldPrograms, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "shardq-upgrade-")
	if err != nil {
		return oldPrograms{}, err
	}
	old.dir = dir
	tree := filepath.Join(dir, "tree")
	archive, err := command(ctx, root, nil, "git", "archive", "--format=tar", commit)
	if err != nil {
		return oldPrograms{}, err
	}
	if err := untar(archive, tree); err != nil {
		return oldPrograms{}, fmt.Errorf("extract %s: %w", commit, err)
	}
	sources := map[string]string{
		"upgradeproducer": producerSource,
		"upgradefeeder":   feederSource,
		"upgradeworker":   workerSource,
	}
	var pkgs []string
	for name, src := range sources {
		pkg := filepath.Join(tree, "cmd", name)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return oldPrograms{}, err
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			return oldPrograms{}, err
		}
		pkgs = append(pkgs, "./cmd/"+name)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return oldPrograms{}, err
	}
	// Modules come from the module cache, so the build is offline once
	// 0.1.0's dependencies were downloaded. The build flags are go vet's, so
	// the standard library and the dependencies (0.1.0 has this module's
	// versions) come from the build cache that make check filled; only
	// 0.1.0's own packages compile, as their directory is new each run.
	env := []string{"GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local"}
	args := append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)
	if _, err := command(ctx, tree, env, "go", args...); err != nil {
		return oldPrograms{}, err
	}
	return oldPrograms{
		Producer: filepath.Join(bin, "upgradeproducer"),
		Feeder:   filepath.Join(bin, "upgradefeeder"),
		Worker:   filepath.Join(bin, "upgradeworker"),
	}, nil
}

// command runs name with args in dir and returns its standard output, or
// an error that carries its standard error.
func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
