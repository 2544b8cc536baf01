package rcall

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// includeDirective is the line prefix that pulls a shared file from include/
// into a script: "--@include sharded" inlines include/sharded.lua. A script
// in a folder (engine/ack.lua) looks in its folder's include/ first
// (engine/include/), then in the top one.
const includeDirective = "--@include "

// scriptDirective inlines another script of the same folder, without its
// shebang line, so a variant can wrap a script's whole body in a function
// and run it unchanged: "--@script enqueue" inlines enqueue.lua.
const scriptDirective = "--@script "

// Resolve returns the source of the script name (without ".lua", with its
// folder: "engine/ack") from fsys with every include directive replaced by
// the named file under the script folder's include/ or the top include/.
// A file included twice is inlined once; a missing include or an include
// cycle is an error naming the chain.
func Resolve(fsys fs.FS, name string) (string, error) {
	r := resolver{fsys: fsys, dir: path.Dir(name), done: map[string]bool{}}
	var b strings.Builder
	if err := r.inline(&b, name+".lua", nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

type resolver struct {
	fsys fs.FS
	dir  string // the script's folder: "." or "engine"
	done map[string]bool
}

// include returns the file an include directive names: in the script
// folder's include/ when it is there, else in the top include/.
func (r *resolver) include(name string) string {
	if r.dir != "." {
		own := path.Join(r.dir, "include", name+".lua")
		if _, err := fs.Stat(r.fsys, own); err == nil {
			return own
		}
	}
	return path.Join("include", name+".lua")
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
			if err := r.inline(b, r.include(strings.TrimSpace(inc)), stack); err != nil {
				return err
			}
			continue
		}
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), scriptDirective); ok {
			if err := r.inline(b, path.Join(r.dir, strings.TrimSpace(inc)+".lua"), stack); err != nil {
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

// ResolveAll resolves every .lua file of fsys's top folder and of the
// folders beside include/ (engine/) into a Script, named without its
// folder: two scripts of one name are an error.
func ResolveAll(fsys fs.FS) (map[string]*Script, error) {
	top, err := fs.Glob(fsys, "*.lua")
	if err != nil {
		return nil, err
	}
	nested, err := fs.Glob(fsys, "*/*.lua")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Script, len(top)+len(nested))
	for _, file := range append(top, nested...) {
		if path.Dir(file) == "include" {
			continue
		}
		name := strings.TrimSuffix(path.Base(file), ".lua")
		if _, ok := out[name]; ok {
			return nil, fmt.Errorf("lua: two scripts named %s (%s)", name, file)
		}
		src, err := Resolve(fsys, strings.TrimSuffix(file, ".lua"))
		if err != nil {
			return nil, err
		}
		out[name] = NewScript(name, src)
	}
	return out, nil
}
