package worker

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, when the parent test set childEnv, the
// child worker program of child_test.go: the crash tests start this same
// test binary as a worker process, so they can kill it with real signals.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}
