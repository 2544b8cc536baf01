package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
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

// TestQuickPayloads runs the payloads workload scaled down: every system
// gives every figure, positive, the processing runs passed the
// exactly-once and nothing-left checks with the payload intact, and each
// form has its ratios and its verdict on the targets.
func TestQuickPayloads(t *testing.T) {
	var out, progress bytes.Buffer
	err := run(context.Background(), options{quick: true, only: "payloads", timeout: 3 * time.Minute}, &out, &progress)
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
	if strings.Contains(got, "| "+figEnqRate+" |") {
		t.Errorf("-only payloads ran another workload:\n%s", got)
	}
	// a row's cells: the figure, each system's value, then (memory) the
	// best peer's name, then the ratios
	check := func(fig string, values, names, ratios int) {
		t.Helper()
		var cells []string
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(l, "| "+fig+" |") {
				cells = strings.Split(strings.Trim(l, "| "), " | ")
			}
		}
		if len(cells) != 1+values+names+ratios {
			t.Errorf("row %q: %d cells, want %d:\n%s", fig, len(cells), 1+values+names+ratios, got)
			return
		}
		for _, c := range cells[1 : 1+values] {
			if v, err := strconv.ParseFloat(strings.Fields(c)[0], 64); err != nil || v <= 0 {
				t.Errorf("row %q: value %q is not positive", fig, c)
			}
		}
		for _, c := range cells[1+values+names:] {
			if v, err := strconv.ParseFloat(strings.TrimSuffix(c, "×"), 64); !strings.HasSuffix(c, "×") || err != nil || v <= 0 {
				t.Errorf("row %q: ratio %q is not positive", fig, c)
			}
		}
	}
	forms := len(docMemoryMakers) - len(docPeers)
	for _, n := range quickSizes.memory {
		check(figDocMemory(n), len(docMemoryMakers), 1, forms)
	}
	for _, fig := range []string{figDocEnqRate, figDocEnqRedis, figDocEnqClient, figDocBatchRate, figDocBatchRedis, figDocBatchClient, figDocProcRate, figDocProcRedis, figDocProcClient} {
		check(fig, len(docRateMakers), 0, len(docRateMakers)-1)
	}
	for _, target := range []string{"target, memory", "target, rates"} {
		if n := regexp.MustCompile(target + `.*`).FindString(got); strings.Count(n, " met (")+strings.Count(n, " missed (") == 0 {
			t.Errorf("no verdict on %q in:\n%s", target, got)
		}
	}
}

// TestDocIndex checks that a handler finds each document's task, and
// that a document changed on the way is none.
func TestDocIndex(t *testing.T) {
	d, err := newDocSet(300, 200)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range d.payloads(0, 200) {
		if got := d.index(bytes.Clone(p)); got != i {
			t.Fatalf("index of document %d = %d", i, got)
		}
	}
	changed := bytes.Clone(d.docs[7])
	changed[len(changed)-2]++
	for _, p := range [][]byte{changed, d.docs[250], []byte("{}"), payloadFor(7, 100)} {
		if got := d.index(p); got != -1 {
			t.Errorf("index of %.40q = %d, want -1", p, got)
		}
	}
	again, _ := newDocSet(300, 0)
	if !bytes.Equal(again.docs[299], d.docs[299]) || bytes.Equal(d.docs[0], d.docs[1]) {
		t.Error("the documents are not the same every run, or not each different")
	}
}
