package upgrade_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// ledger gathers who ran which task: the 0.1.0 workers' lines in their
// runs file and the current workers' runs in memory. Each task's payload
// is unique, so a payload seen twice is a task run twice.
type ledger struct {
	file string // the 0.1.0 workers' runs (workerSource)
	mu   sync.Mutex
	news []string // payloads the current workers ran
	wake chan struct{}
}

func newLedger(file string) *ledger {
	return &ledger{file: file, wake: make(chan struct{}, 1)}
}

// ranNew records a current worker's run of payload.
func (l *ledger) ranNew(payload string) {
	l.mu.Lock()
	l.news = append(l.news, payload)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// runs maps each payload that ran to the workers that ran it, "old" or
// "new", once per run.
func (l *ledger) runs(t *testing.T) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	b, err := os.ReadFile(l.file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// a line is whole once its newline is written: skip a last one
	// that is not
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line) // "old TYPE PAYLOAD"
		if len(f) != 3 || f[0] != "old" {
			t.Fatalf("runs file %s: line %q, want \"old TYPE PAYLOAD\"", l.file, line)
		}
		m[f[2]] = append(m[f[2]], "old")
	}
	l.mu.Lock()
	for _, p := range l.news {
		m[p] = append(m[p], "new")
	}
	l.mu.Unlock()
	return m
}

// count returns how many of payloads ran, and how many of those runs were
// by a 0.1.0 and by a current worker.
func (l *ledger) count(t *testing.T, payloads []string) (ran, byOld, byNew int) {
	t.Helper()
	m := l.runs(t)
	for _, p := range payloads {
		if len(m[p]) > 0 {
			ran++
		}
		for _, who := range m[p] {
			if who == "old" {
				byOld++
			} else {
				byNew++
			}
		}
	}
	return ran, byOld, byNew
}

// waitFor waits until cond holds, rechecking after each current worker's
// run and every 20ms (the 0.1.0 workers' runs and Redis change without
// waking it), until ctx ends; then it fails with what detail says.
func (l *ledger) waitFor(ctx context.Context, t *testing.T, what string, cond func() bool, detail func() string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; %s", what, detail())
		case <-l.wake:
		case <-tick.C:
		}
	}
}
