package rcall

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func TestResolve(t *testing.T) {
	fsys := fstest.MapFS{
		"main.lua":         {Data: []byte("--@include a\n--@include b\nreturn x\n")},
		"include/a.lua":    {Data: []byte("--@include c\nlocal a = 1\n")},
		"include/b.lua":    {Data: []byte("--@include c\nlocal b = 2\n")},
		"include/c.lua":    {Data: []byte("local c = 3\n")},
		"missing.lua":      {Data: []byte("--@include nope\n")},
		"cycle.lua":        {Data: []byte("--@include x\n")},
		"include/x.lua":    {Data: []byte("--@include y\n")},
		"include/y.lua":    {Data: []byte("--@include x\n")},
		"selfcycle.lua":    {Data: []byte("--@include self\n")},
		"include/self.lua": {Data: []byte("--@include self\n")},
	}
	t.Run("IncludesInlinedOnce", func(t *testing.T) {
		src, err := Resolve(fsys, "main")
		if err != nil {
			t.Fatal(err)
		}
		want := "local c = 3\nlocal a = 1\nlocal b = 2\nreturn x\n"
		if src != want {
			t.Fatalf("resolved source:\n%s\nwant:\n%s", src, want)
		}
	})
	t.Run("MissingIncludeFails", func(t *testing.T) {
		_, err := Resolve(fsys, "missing")
		if !errors.Is(err, ErrMissingInclude) || !strings.Contains(err.Error(), "include/nope.lua") {
			t.Fatalf("err = %v, want ErrMissingInclude naming include/nope.lua", err)
		}
	})
	t.Run("CycleFails", func(t *testing.T) {
		for _, name := range []string{"cycle", "selfcycle"} {
			_, err := Resolve(fsys, name)
			if !errors.Is(err, ErrIncludeCycle) {
				t.Fatalf("%s: err = %v, want ErrIncludeCycle", name, err)
			}
		}
		_, err := Resolve(fsys, "cycle")
		if !strings.Contains(err.Error(), "include/x.lua -> include/y.lua -> include/x.lua") {
			t.Fatalf("cycle error %q does not name the chain", err)
		}
	})
	t.Run("ScriptInlinedWithoutItsShebang", func(t *testing.T) {
		fsys := fstest.MapFS{
			"base.lua":      {Data: []byte("#!lua flags=no-writes\n--@include c\nreturn c\n")},
			"wrap.lua":      {Data: []byte("#!lua\n--@include c\nlocal function f()\n--@script base\nend\nreturn f()\n")},
			"include/c.lua": {Data: []byte("local c = 3\n")},
		}
		src, err := Resolve(fsys, "wrap")
		if err != nil {
			t.Fatal(err)
		}
		want := "#!lua\nlocal c = 3\nlocal function f()\nreturn c\nend\nreturn f()\n"
		if src != want {
			t.Fatalf("resolved source:\n%s\nwant:\n%s", src, want)
		}
	})
	t.Run("MissingScriptFails", func(t *testing.T) {
		if _, err := Resolve(fsys, "absent"); err == nil {
			t.Fatal("resolving a missing script succeeded")
		}
	})
	t.Run("FolderIncludesFirst", func(t *testing.T) {
		fsys := fstest.MapFS{
			"engine/ack.lua":            {Data: []byte("--@include own\n--@include shared\n--@script base\n")},
			"engine/base.lua":           {Data: []byte("#!lua\nlocal base = 1\n")},
			"engine/include/own.lua":    {Data: []byte("--@include shared\nlocal own = 1\n")},
			"engine/include/shared.lua": {Data: []byte("local shadowed = 1\n")},
			"include/shared.lua":        {Data: []byte("local shared = 1\n")},
			"include/own.lua":           {Data: []byte("local wrong = 1\n")},
			"top.lua":                   {Data: []byte("--@include own\n")},
		}
		src, err := Resolve(fsys, "engine/ack")
		if err != nil {
			t.Fatal(err)
		}
		if want := "local shadowed = 1\nlocal own = 1\nlocal base = 1\n"; src != want {
			t.Fatalf("resolved source:\n%s\nwant:\n%s", src, want)
		}
		if src, err := Resolve(fsys, "top"); err != nil || src != "local wrong = 1\n" {
			t.Fatalf("a top script reads the top include/: %q, %v", src, err)
		}
		all, err := ResolveAll(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all["ack"] == nil || all["base"] == nil || all["top"] == nil {
			t.Fatalf("ResolveAll named %v, want ack, base and top", all)
		}
		fsys["dup.lua"], fsys["engine/dup.lua"] = &fstest.MapFile{}, &fstest.MapFile{}
		if _, err := ResolveAll(fsys); err == nil || !strings.Contains(err.Error(), "two scripts named dup") {
			t.Fatalf("two scripts of one name: %v", err)
		}
	})
}
