package lua

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// unsplitIncludes are the includes not yet cut into one function per file
// (issue 43, item 8); TestIncludeShape checks every other include. An
// include taken apart leaves this list, and the test says when one may.
var unsplitIncludes = map[string]bool{}

// TestIncludeShape: an include defines at most one function, named after
// its file (an include of none lists other includes or names constants),
// in at most 150 lines; no function runs past a screen, 60 lines.
func TestIncludeShape(t *testing.T) {
	t.Parallel()
	includes, err := fs.Glob(files, "include/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := fs.Glob(files, "engine/include/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	includes = append(includes, engine...)
	fn := regexp.MustCompile(`^(?:local )?function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	for _, file := range includes {
		name := strings.TrimSuffix(path.Base(file), ".lua")
		b, err := files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		var funcs []string
		var long []string
		for i, line := range lines {
			m := fn.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			funcs = append(funcs, m[1])
			end := i
			for end < len(lines) && lines[end] != "end" && !strings.HasSuffix(lines[i], " end") {
				end++
			}
			if end-i+1 > 60 {
				long = append(long, m[1])
			}
		}
		shaped := len(lines) <= 150 && len(long) == 0 && (len(funcs) == 0 || len(funcs) == 1 && funcs[0] == name)
		switch {
		case unsplitIncludes[name] && shaped:
			t.Errorf("%s has one function named after it now: take it off unsplitIncludes", file)
		case unsplitIncludes[name]:
		case len(funcs) > 1 || len(funcs) == 1 && funcs[0] != name:
			t.Errorf("%s defines %v; an include defines one function, named after its file", file, funcs)
		case len(lines) > 150:
			t.Errorf("%s has %d lines, more than 150", file, len(lines))
		case len(long) > 0:
			t.Errorf("%s: %v runs past 60 lines", file, long)
		}
	}
}

// TestScriptShape: a script, once its includes hold its functions, reads
// in at most 150 lines, and no function of it runs past a screen, 60
// lines.
func TestScriptShape(t *testing.T) {
	t.Parallel()
	scripts, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := fs.Glob(files, "engine/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`^(?:local )?function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	for _, file := range append(scripts, engine...) {
		b, err := files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) > 150 {
			t.Errorf("%s has %d lines, more than 150: move a stage into an include", file, len(lines))
		}
		for i, line := range lines {
			if !fn.MatchString(line) {
				continue
			}
			end := i
			for end < len(lines) && lines[end] != "end" && !strings.HasSuffix(line, " end") {
				end++
			}
			if end-i+1 > 60 {
				t.Errorf("%s: function at line %d runs %d lines, past 60", file, i+1, end-i+1)
			}
		}
	}
}
