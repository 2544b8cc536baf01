package crosslang

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/script"
)

// python is the interpreter the Python client runs on: Debian's, whose
// packages (python3-redis, -msgpack, -zstandard, -cryptography) it uses.
const python = "/usr/bin/python3"

// pythonDir is the Python client's source tree, from this package.
const pythonDir = "../../clients/python"

// pythonModules are what the client and its driver import.
var pythonModules = []string{"redis", "msgpack", "zstandard", "cryptography"}

// needPython skips the test, or fails it under SHARDQ_CLIENTS_REQUIRED,
// when the interpreter or a package the client imports is missing.
func needPython(t *testing.T) {
	t.Helper()
	probe := "import " + strings.Join(pythonModules, ", ")
	out, err := exec.Command(python, "-c", probe).CombinedOutput()
	if err == nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	msg := "the Python client needs " + python + " with Debian's python3-redis, python3-msgpack, python3-zstandard " +
		"and python3-cryptography (apt-get install them): " + lines[len(lines)-1] + " (" + err.Error() + ")"
	if required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestPythonMatrix: the Python client's tasks run on a Go worker as
// contract.md says, each once, with the payload it sent, and it reads
// their results back.
func TestPythonMatrix(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir, err := filepath.Abs(pythonDir)
	if err != nil {
		t.Fatal(err)
	}
	runMatrix(t, "py", command{Dir: dir, Argv: []string{python, filepath.Join(dir, "tests", "e2e_driver.py")}})
}

// TestPythonScripts: the scripts the Python client vendors are the ones
// this build runs, byte for byte (EVALSHA names them by their SHA-1);
// clients/python/tools/resolve_scripts.py writes them again.
func TestPythonScripts(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]interface {
		Hash() string
		Source() string
	}{"enqueue": script.Enqueue, "enqueue_capped": script.EnqueueCapped, "enqueue_one": script.EnqueueOne, "get_task": script.GetTask} {
		b, err := os.ReadFile(filepath.Join(pythonDir, "shardq", "_lua", name+".lua"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha1.Sum(b)
		if got := hex.EncodeToString(sum[:]); got != s.Hash() || string(b) != s.Source() {
			t.Errorf("clients/python/shardq/_lua/%s.lua has SHA-1 %s, this build runs %s: "+
				"run /usr/bin/python3 clients/python/tools/resolve_scripts.py", name, got, s.Hash())
		}
	}
}
