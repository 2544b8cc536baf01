package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// build is one side of the comparison: its binaries and where they run.
type build struct {
	name   string // "old" or "new"
	label  string // the revision, for the report
	tree   string // the repository's root
	bench  string // the bench binary
	worker string // the worker package's test binary
}

// buildOld extracts rev's tree into dir and builds its binaries there.
func buildOld(ctx context.Context, repo, rev, dir string) (*build, error) {
	commit, err := output(ctx, repo, nil, "git", "rev-parse", "--short", "--verify", rev+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("resolve -old %s: %w", rev, err)
	}
	commit = strings.TrimSpace(commit)
	tree := filepath.Join(dir, "old")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return nil, err
	}
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", tree)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return nil, err
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return nil, err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return nil, fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.Bytes())
	}
	if err := untar.Wait(); err != nil {
		return nil, fmt.Errorf("extract %s: %w: %s", commit, err, stderr.Bytes())
	}
	// -mod=mod: a tree from history may lack a go.sum line that the
	// module cache can supply.
	return compile(ctx, "old", commit, tree, dir, "GOFLAGS=-mod=mod")
}

// buildNew builds the working tree's binaries, uncommitted changes and
// all.
func buildNew(ctx context.Context, tree, dir string) (*build, error) {
	label := "working tree"
	if head, err := output(ctx, tree, nil, "git", "rev-parse", "--short", "HEAD"); err == nil {
		label = "working tree at " + strings.TrimSpace(head)
		if st, err := output(ctx, tree, nil, "git", "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			label += " with changes"
		}
	}
	return compile(ctx, "new", label, tree, dir)
}

// compile builds tree's bench binary and worker test binary into dir,
// with env added to the go command's environment.
func compile(ctx context.Context, name, label, tree, dir string, env ...string) (*build, error) {
	b := &build{
		name:   name,
		label:  label,
		tree:   tree,
		bench:  filepath.Join(dir, "bench-"+name),
		worker: filepath.Join(dir, "worker-"+name+".test"),
	}
	env = append([]string{"GOWORK=off"}, env...)
	// -trimpath keeps the temporary tree's path out of the build cache's
	// keys, so a second comparison with the same -old compiles nothing.
	if _, err := output(ctx, filepath.Join(tree, "bench"), env, "go", "build", "-trimpath", "-o", b.bench, "."); err != nil {
		return nil, fmt.Errorf("build the %s bench: %w", name, err)
	}
	if _, err := output(ctx, tree, env, "go", "test", "-c", "-trimpath", "-o", b.worker, "./worker"); err != nil {
		return nil, fmt.Errorf("build the %s worker tests: %w", name, err)
	}
	return b, nil
}

// output runs name in dir and returns its standard output; its error
// carries the standard error.
func output(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	return capture(ctx, dir, env, nil, name, args...)
}

// capture is output, with the standard error also copied to progress when
// that is not nil.
func capture(ctx context.Context, dir string, env []string, progress io.Writer, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if progress != nil {
		cmd.Stderr = io.MultiWriter(&stderr, progress)
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 4000 {
			msg = "…" + msg[len(msg)-4000:]
		}
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// errNoFigures is a run whose output held none of the figures looked for.
var errNoFigures = errors.New("no figures in the output")
