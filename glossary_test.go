package shardq_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGlossaryWords: no exported name of a public package, and no godoc
// of one, uses a word the glossary of docs/ARCHITECTURE.md lists under
// "Words we do not use". A phrase ("concurrency key") is looked for in
// godoc and, spelled in CamelCase ("ConcurrencyKey"), in exported names; a
// single word with a note ("done (a task's state)") only in exported names,
// since as an English word it has other senses.
func TestGlossaryWords(t *testing.T) {
	t.Parallel()
	avoid := avoidedWords(t)
	if len(avoid) < 3 {
		t.Fatalf("the glossary lists %d words not to use, want its table", len(avoid))
	}
	names := exportedNames(t)
	for _, w := range avoid {
		camel := regexp.MustCompile(`(^|[^A-Za-z]|[a-z])` + camelCase(w.phrase) + `([^a-z]|$)`)
		for _, n := range names {
			if camel.MatchString(n.name) {
				t.Errorf("%s: exported name %s uses %q (the glossary says: %s)", n.pkg, n.name, w.phrase, w.say)
			}
		}
	}
	for _, dir := range publicPackages {
		for _, doc := range godocs(t, filepath.Join(".", dir)) {
			low := strings.ToLower(doc.text)
			for _, w := range avoid {
				if w.namesOnly {
					continue
				}
				if strings.Contains(low, w.phrase) {
					t.Errorf("%s: the godoc of %s uses %q (the glossary says: %s)", doc.file, doc.name, w.phrase, w.say)
				}
			}
		}
	}
}

type avoided struct {
	phrase, say string
	namesOnly   bool // a note in parentheses limits it to exported names
}

// avoidedWords reads the table after "Words we do not use" in the
// architecture doc.
func avoidedWords(t *testing.T) []avoided {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "Words we do not use")
	if i < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "Words we do not use" table`)
	}
	var out []avoided
	for _, line := range strings.Split(s[i:], "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if len(out) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 2 || strings.HasPrefix(cells[0], "---") || strings.TrimSpace(cells[0]) == "do not use" {
			continue
		}
		w := avoided{phrase: strings.ToLower(strings.TrimSpace(cells[0])), say: strings.TrimSpace(cells[1])}
		if j := strings.Index(w.phrase, " ("); j >= 0 {
			w.phrase, w.namesOnly = w.phrase[:j], true
		}
		out = append(out, w)
	}
	return out
}

// camelCase spells a phrase as an exported name would: "unique key" ->
// "UniqueKey".
func camelCase(phrase string) string {
	var b strings.Builder
	for _, f := range strings.Fields(phrase) {
		b.WriteString(strings.ToUpper(f[:1]) + f[1:])
	}
	return b.String()
}

type exported struct{ pkg, name string }

// exportedNames lists every exported identifier of the api/*.txt files:
// names of types, functions, methods, constants, variables and fields.
func exportedNames(t *testing.T) []exported {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("api", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no api/*.txt: %v", err)
	}
	ident := regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	var out []exported
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			decl, _, _ := strings.Cut(line, " = ") // a value's text is not a name
			for _, n := range ident.FindAllString(decl, -1) {
				out = append(out, exported{filepath.Base(f), n})
			}
		}
	}
	return out
}

type godoc struct{ file, name, text string }

// godocs returns the doc comments of the package in dir and of its
// exported declarations, fields included.
func godocs(t *testing.T, dir string) []godoc {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []godoc
	add := func(file, name string, g *ast.CommentGroup) {
		if g != nil {
			out = append(out, godoc{file, name, g.Text()})
		}
	}
	for _, file := range bp.GoFiles {
		path := filepath.Join(dir, file)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		add(path, "package "+f.Name.Name, f.Doc)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					add(path, d.Name.Name, d.Doc)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						add(path, s.Name.Name, d.Doc)
						add(path, s.Name.Name, s.Doc)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										add(path, s.Name.Name+"."+n.Name, fl.Doc)
										add(path, s.Name.Name+"."+n.Name, fl.Comment)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								add(path, n.Name, d.Doc)
								add(path, n.Name, s.Doc)
								add(path, n.Name, s.Comment)
							}
						}
					}
				}
			}
		}
	}
	return out
}
