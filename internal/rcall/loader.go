package rcall

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// includeDirective is the line prefix that pulls a shared file from include/
// into a script: "--@include sharded" inlines include/sharded.lua.
const includeDirective = "--@include "

// scriptDirective inlines another top-level script, without its shebang
// line, so a variant can wrap a script's whole body in a function and run
// it unchanged: "--@script enqueue" inlines enqueue.lua.
const scriptDirective = "--@script "

// Resolve returns the source of the script name (without ".lua") from fsys
// with every include directive replaced by the named file under include/.
// A file included twice is inlined once; a missing include or an include
// cycle is an error naming the chain.
func Resolve(fsys fs.FS, name string) (string, error) {
	r := resolver{fsys: fsys, done: map[string]bool{}}
	var b strings.Builder
	if err := r.inline(&b, name+".lua", nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

type resolver struct {
	fsys fs.FS
	done map[string]bool
}

func (r *resolver) inline(b *strings.Builder, file string, stack []string) error {
	for _, s := range stack {
		if s == file {
			return fmt.Errorf("%w: %s", ErrIncludeCycle, strings.Join(append(stack, file), " -> "))
		}
	}
	if r.done[file] {
		return nil
	}
	src, err := fs.ReadFile(r.fsys, file)
	if err != nil {
		if len(stack) > 0 {
			return fmt.Errorf("%w: %s (from %s)", ErrMissingInclude, file, stack[len(stack)-1])
		}
		return fmt.Errorf("lua: read script %s: %w", file, err)
	}
	stack = append(stack, file)
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		if n == 0 && len(stack) > 1 && strings.HasPrefix(line, "#!") {
			continue // only the outermost script's flags count, and only on its first line
		}
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), includeDirective); ok {
			if err := r.inline(b, path.Join("include", strings.TrimSpace(inc)+".lua"), stack); err != nil {
				return err
			}
			continue
		}
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), scriptDirective); ok {
			if err := r.inline(b, path.Clean(strings.TrimSpace(inc)+".lua"), stack); err != nil {
				return err
			}
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	r.done[file] = true
	return sc.Err()
}

// ResolveAll resolves every top-level .lua file of fsys into a Script.
func ResolveAll(fsys fs.FS) (map[string]*Script, error) {
	names, err := fs.Glob(fsys, "*.lua")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Script, len(names))
	for _, file := range names {
		name := strings.TrimSuffix(file, ".lua")
		src, err := Resolve(fsys, name)
		if err != nil {
			return nil, err
		}
		out[name] = NewScript(name, src)
	}
	return out, nil
}
