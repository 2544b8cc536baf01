package queuetest_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// exampleTest runs test as go test runs a test function, so that an
// example can show a test: in your code, write func TestXxx(t *testing.T)
// and use its t. A failure is printed, which fails the example's output.
func exampleTest(test func(t testing.TB)) {
	t := &exampleT{}
	done := make(chan struct{})
	go func() { // FailNow ends this goroutine, as it ends a test's
		defer close(done)
		test(t)
	}()
	<-done
	t.mu.Lock()
	cleanups := slices.Clone(t.cleanups)
	t.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
}

// exampleT is the part of testing.TB that queuetest uses. Calling any
// other method panics (its embedded testing.TB is nil).
type exampleT struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (t *exampleT) Helper()      {}
func (t *exampleT) Name() string { return "Example" }

func (t *exampleT) Context() context.Context { return context.Background() }

func (t *exampleT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *exampleT) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (t *exampleT) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *exampleT) Error(args ...any)               { t.fail(fmt.Sprint(args...)) }
func (t *exampleT) Errorf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
}
func (t *exampleT) Fatal(args ...any)                 { t.Error(args...); t.FailNow() }
func (t *exampleT) Fatalf(format string, args ...any) { t.Errorf(format, args...); t.FailNow() }
func (t *exampleT) Fail()                             { t.fail("") }
func (t *exampleT) FailNow()                          { t.Fail(); runtime.Goexit() }

func (t *exampleT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *exampleT) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	if msg != "" {
		fmt.Println("FAIL:", msg)
	}
}
