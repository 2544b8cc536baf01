package shardq_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// directDecode matches a msgpack decode that does not go through
// internal/wire, in code.
var directDecode = regexp.MustCompile(`\bmsgpack\.(Unmarshal|NewDecoder|GetDecoder)\(`)

// TestMsgpackDecodesGoThroughWire: outside internal/wire, no code of the
// library, its modules or the binary calls msgpack's decoder itself. It
// sizes what it allocates by the counts a value claims, so bytes from
// Redis or a caller could end the process (issue 42); wire.Unmarshal and
// wire.NewDecoder check them against the bytes present first. A call
// that must stay says why on its line, after "wire:unchecked".
func TestMsgpackDecodesGoThroughWire(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// bench/ measures other libraries and is run by hand; tools/
			// pins staticcheck; testdata holds no code of ours
			switch path {
			case "bench", "tools", filepath.Join("internal", "wire"):
				return filepath.SkipDir
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for n, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if directDecode.MatchString(code) && !strings.Contains(line, "wire:unchecked") {
				t.Errorf("%s:%d: %s: decode msgpack with wire.Unmarshal or wire.NewDecoder", path, n+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
