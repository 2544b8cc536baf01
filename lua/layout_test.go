package lua

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEngineScriptsUnderEngine: the scripts at the top of lua/ are the
// primitives' own, each resolved by this package's code, and every other
// script sits under engine/, so an engine script moved back beside the
// primitives fails here (issue 43, item 1).
func TestEngineScriptsUnderEngine(t *testing.T) {
	t.Parallel()
	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	resolved := regexp.MustCompile(`mustResolve\("([a-z_]+)"\)`)
	var primitives []string
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resolved.FindAllStringSubmatch(string(b), -1) {
			primitives = append(primitives, m[1])
		}
	}
	top, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range top {
		if name := strings.TrimSuffix(f, ".lua"); !slices.Contains(primitives, name) {
			t.Errorf("%s is no primitive's script: the engine's scripts go in engine/", f)
		}
	}
	if len(top) != len(primitives) || len(top) == 0 {
		t.Errorf("%d scripts at the top of lua/, %d resolved by the primitives", len(top), len(primitives))
	}
	engine, err := fs.Glob(files, "engine/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(engine) == 0 {
		t.Error("no script under engine/")
	}
}
