package shardq_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite api/*.txt from the packages' exported declarations")

// publicPackages are the packages users import, each with a golden file
// api/<name>.txt.
var publicPackages = []string{"", "queue", "worker", "lua", "dashboard", "metrics", "tracing", "queuetest"}

// TestAPI: the exported declarations of every public package are those
// of its golden file in api/, so that every change of the public API is
// a diff of api/ in review. After a deliberate change, run
//
//	go test -run TestAPI -update-api .
//
// and commit api/ with the change.
func TestAPI(t *testing.T) {
	t.Parallel()
	for _, dir := range publicPackages {
		name := dir
		if name == "" {
			name = "shardq"
		}
		got := strings.Join(apiOf(t, filepath.Join(".", dir), name), "\n") + "\n"
		golden := filepath.Join("api", name+".txt")
		if *updateAPI {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (write it with: go test -run TestAPI -update-api .)", err)
		}
		if got != string(want) {
			t.Errorf("the exported API of %s differs from %s (after a deliberate change: go test -run TestAPI -update-api .):\n%s",
				name, golden, lineDiff(string(want), got))
		}
	}
}

// apiOf lists the exported declarations of the package in dir, one per
// line, sorted: "pkg queue, func NewClient(redis.UniversalClient, Config) (*Client, error)".
func apiOf(t *testing.T, dir, name string) []string {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Name != name {
		t.Fatalf("package %s in %s, want %s", bp.Name, dir, name)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, file := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, "pkg "+name+", "+fmt.Sprintf(format, args...))
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add("func %s%s", d.Name.Name, signature(fset, d.Type))
					continue
				}
				recv := expr(fset, d.Recv.List[0].Type)
				if !ast.IsExported(strings.TrimLeft(recv, "*")) {
					continue
				}
				add("method (%s) %s%s", recv, d.Name.Name, signature(fset, d.Type))
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						kind := d.Tok.String()
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							line := kind + " " + n.Name
							if s.Type != nil {
								line += " " + expr(fset, s.Type)
							}
							if i < len(s.Values) {
								line += " = " + expr(fset, s.Values[i])
							}
							add("%s", line)
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							typeLines(fset, s, add)
						}
					}
				}
			}
		}
	}
	sort.Strings(lines)
	return lines
}

// typeLines lists a type, and each exported field or method of a struct
// or interface on a line of its own.
func typeLines(fset *token.FileSet, s *ast.TypeSpec, add func(string, ...any)) {
	name := s.Name.Name
	if s.TypeParams != nil {
		name += "[" + fieldList(fset, s.TypeParams, true) + "]"
	}
	if s.Assign.IsValid() {
		add("type %s = %s", name, expr(fset, s.Type))
		return
	}
	switch tt := s.Type.(type) {
	case *ast.StructType:
		add("type %s struct", name)
		for _, f := range tt.Fields.List {
			if len(f.Names) == 0 {
				add("type %s struct, embedded %s", name, expr(fset, f.Type))
			}
			for _, n := range f.Names {
				if n.IsExported() {
					add("type %s struct, %s %s", name, n.Name, expr(fset, f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		add("type %s interface", name)
		for _, m := range tt.Methods.List {
			for _, n := range m.Names {
				if ft, ok := m.Type.(*ast.FuncType); ok && n.IsExported() {
					add("type %s interface, %s%s", name, n.Name, signature(fset, ft))
				}
			}
			if len(m.Names) == 0 {
				add("type %s interface, embedded %s", name, expr(fset, m.Type))
			}
		}
	default:
		add("type %s %s", name, expr(fset, s.Type))
	}
}

// signature prints a function type without parameter names.
func signature(fset *token.FileSet, ft *ast.FuncType) string {
	s := ""
	if ft.TypeParams != nil {
		s += "[" + fieldList(fset, ft.TypeParams, true) + "]"
	}
	s += "(" + fieldList(fset, ft.Params, false) + ")"
	if ft.Results != nil {
		r := fieldList(fset, ft.Results, false)
		if len(ft.Results.List) > 1 || len(ft.Results.List[0].Names) > 1 {
			r = "(" + r + ")"
		}
		s += " " + r
	}
	return s
}

// fieldList prints the types of a parameter list, once per name; with
// names, as type parameters need them.
func fieldList(fset *token.FileSet, l *ast.FieldList, names bool) string {
	var parts []string
	for _, f := range l.List {
		typ := expr(fset, f.Type)
		if names {
			var ns []string
			for _, n := range f.Names {
				ns = append(ns, n.Name)
			}
			parts = append(parts, strings.Join(ns, ", ")+" "+typ)
			continue
		}
		for range max(len(f.Names), 1) {
			parts = append(parts, typ)
		}
	}
	return strings.Join(parts, ", ")
}

func expr(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, e); err != nil {
		panic(err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
