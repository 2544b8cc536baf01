package docs

import (
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// snippetImports maps the package names a fragment may use to their
// import paths. A fragment names no imports; the check adds these.
var snippetImports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"http":       "net/http",
	"httptest":   "net/http/httptest",
	"json":       "encoding/json",
	"log":        "log",
	"math":       "math",
	"os":         "os",
	"signal":     "os/signal",
	"slog":       "log/slog",
	"strings":    "strings",
	"sync":       "sync",
	"syscall":    "syscall",
	"testing":    "testing",
	"time":       "time",
	"redis":      "github.com/redis/go-redis/v9",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"otel":       "go.opentelemetry.io/otel",
	"dashboard":  "github.com/shardq/shardq/dashboard",
	"lua":        "github.com/shardq/shardq/lua",
	"metrics":    "github.com/shardq/shardq/metrics",
	"queue":      "github.com/shardq/shardq/queue",
	"queuetest":  "github.com/shardq/shardq/queuetest",
	"tracing":    "github.com/shardq/shardq/tracing",
	"worker":     "github.com/shardq/shardq/worker",
}

// snippetVars are the variables a fragment may use without declaring
// them, as the prose around it introduces them.
const snippetVars = `
var (
	ctx    context.Context
	rdb    redis.UniversalClient
	client *queue.Client
	insp   *queue.Inspector
	mux    *worker.Mux
	srv    *worker.Server
	task   *queue.Task
	t      *testing.T
)
`

// TestSnippetsCompile type-checks every Go block (```go) of the README and
// of the guides in this directory. A block that starts with "package" is
// a whole file. Any other block is a fragment: the check puts it in the
// body of a function, or at the top level when it declares a function,
// with the imports it names (snippetImports) and the variables of
// snippetVars declared for it. A variable a fragment declares and does
// not use is allowed, as in prose it is often used by the next one.
func TestSnippetsCompile(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	sort.Strings(files)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil)
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range goBlocks(string(src)) {
			name := fmt.Sprintf("%s:%d", f, b.line)
			file := wrapSnippet(b.code)
			// named in this directory, so imports resolve in this module
			path := filepath.Join(dir, fmt.Sprintf("snippet_%d.go", checked))
			if err := typeCheck(fset, imp, path, file); err != nil {
				t.Errorf("%s: the Go block does not compile:\n%v\n--- as checked:\n%s", name, err, numbered(file))
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("only %d Go blocks found in %v", checked, files)
	}
	t.Logf("%d Go blocks compiled", checked)
}

// block is one fenced Go block and the line of the markdown it starts on.
type block struct {
	line int
	code string
}

func goBlocks(md string) []block {
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i + 1
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			b.WriteString(lines[i])
			b.WriteByte('\n')
		}
		out = append(out, block{line: start, code: b.String()})
	}
	return out
}

var (
	qualifier = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`)
	topFunc   = regexp.MustCompile(`(?m)^func [A-Za-z_]`)
	comment   = regexp.MustCompile(`//.*|"(?:[^"\\]|\\.)*"|` + "`[^`]*`")
)

// wrapSnippet returns a block as a Go file.
func wrapSnippet(code string) string {
	if strings.HasPrefix(strings.TrimSpace(stripLeadingComments(code)), "package ") {
		return code
	}
	used := map[string]bool{}
	for _, m := range qualifier.FindAllStringSubmatch(comment.ReplaceAllString(code, ""), -1) {
		if _, ok := snippetImports[m[1]]; ok {
			used[m[1]] = true
		}
	}
	// the variables' types need these
	for _, p := range []string{"context", "redis", "queue", "worker", "testing"} {
		used[p] = true
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, snippetImports[n])
	}
	b.WriteString(")\n")
	b.WriteString(snippetVars)
	if topFunc.MatchString(code) {
		b.WriteString("\n" + code)
	} else {
		b.WriteString("\nfunc _() {\n" + code + "}\n")
	}
	return b.String()
}

func stripLeadingComments(code string) string {
	lines := strings.Split(code, "\n")
	for len(lines) > 0 && (strings.HasPrefix(strings.TrimSpace(lines[0]), "//") || strings.TrimSpace(lines[0]) == "") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// typeCheck type-checks one file as a package of its own. Soft errors
// (a variable or import declared and not used) do not count.
func typeCheck(fset *token.FileSet, imp types.Importer, path, src string) error {
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return err
	}
	var errs []error
	conf := types.Config{Importer: imp, Error: func(err error) {
		var te types.Error
		if errors.As(err, &te) && te.Soft {
			return
		}
		errs = append(errs, err)
	}}
	_, _ = conf.Check(f.Name.Name, fset, []*ast.File{f}, nil)
	return errors.Join(errs...)
}

func numbered(src string) string {
	lines := strings.Split(src, "\n")
	for i := range lines {
		lines[i] = fmt.Sprintf("%3d  %s", i+1, lines[i])
	}
	return strings.Join(lines, "\n")
}
