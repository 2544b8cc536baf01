package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redisproc"
)

// TestQuick runs the whole comparison scaled down: every system gives every
// figure, its processing run passed the exactly-once and nothing-left
// checks, and the ratios are printed.
func TestQuick(t *testing.T) {
	var out, progress bytes.Buffer
	err := run(context.Background(), options{quick: true, timeout: 5 * time.Minute}, &out, &progress)
	if errors.Is(err, redisproc.ErrNotInstalled) {
		t.Skip("redis-server is not installed")
	}
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	got := out.String()
	if strings.Contains(got, "check failed") || strings.Contains(got, "no figure") {
		t.Fatalf("a check failed:\n%s", got)
	}
	for _, fig := range []string{figLimit, figEnqRate, figEnqCmds, figEnqCPU, figManyRate, figManyCPU, figProcRate, figProcCPU, figLatP99, figLatRate, figMemory(quickSizes.memory[0]), figMemory(quickSizes.memory[1])} {
		line := ""
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(l, "| "+fig+" |") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("no row for %q in:\n%s", fig, got)
			continue
		}
		if fig != figLimit && strings.Count(line, "×") != 2 {
			t.Errorf("row %q lacks a system's figure or a ratio: %s", fig, line)
		}
	}
	// the single enqueue's floors: a row each, and every system's rate
	// over its own library's floor
	for _, lib := range []string{"go-redis", "redigo"} {
		if !strings.Contains(got, "| "+figFloorRate(lib)+" | ") {
			t.Errorf("no floor row for %s in:\n%s", lib, got)
		}
	}
	for sys, lib := range floorLib {
		if !regexp.MustCompile(`of the floor of its client library.* ` + regexp.QuoteMeta(sys) + ` [0-9.]+× ` + lib + `'s;`).MatchString(got) {
			t.Errorf("no ratio of %s to the %s floor in:\n%s", sys, lib, got)
		}
	}
}

// TestPayloadIndex checks that a handler reads back the index payloadFor
// wrote, at the benchmark's size and at a size shorter than the index.
func TestPayloadIndex(t *testing.T) {
	for _, i := range []int{0, 7, 999_999} {
		p := payloadFor(i, 100)
		if len(p) != 100 || indexOf(p) != i {
			t.Errorf("payloadFor(%d, 100): %d bytes, index %d", i, len(p), indexOf(p))
		}
	}
	if got := indexOf([]byte("12a")); got != -1 {
		t.Errorf("indexOf of a foreign payload = %d, want -1", got)
	}
}
