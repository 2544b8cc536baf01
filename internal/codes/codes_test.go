package codes_test

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/scriptsrc"
	_ "github.com/shardq/shardq/lua" // sets scriptsrc.FS
)

// TestCodesMatchLua: every code of lua/include/codes.lua has the same
// value under the same name in codes.go, and the other way round.
func TestCodesMatchLua(t *testing.T) {
	src, err := fs.ReadFile(scriptsrc.FS, "include/codes.lua")
	if err != nil {
		t.Fatal(err)
	}
	inLua := map[string]int64{}
	for _, m := range regexp.MustCompile(`(?m)^local ([A-Z_]+) = (-?\d+)$`).FindAllStringSubmatch(string(src), -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		inLua[goName(m[1])] = v
	}
	inGo := goConsts(t)
	if len(inLua) < 20 {
		t.Fatalf("only %d codes read from codes.lua", len(inLua))
	}
	for name, v := range inLua {
		if g, ok := inGo[name]; !ok || g != v {
			t.Errorf("codes.lua %s = %d; codes.go has %d (present: %v)", luaName(name), v, g, ok)
		}
	}
	for name, v := range inGo {
		if _, ok := inLua[name]; !ok {
			t.Errorf("codes.go %s = %d is not in codes.lua as %s", name, v, luaName(name))
		}
	}
}

// goName spells a Lua name the Go way: ENQ_DUPLICATE_ID is EnqDuplicateID,
// POP_OK is PopOK.
func goName(lua string) string {
	var b strings.Builder
	for _, w := range strings.Split(lua, "_") {
		if w == "ID" || w == "OK" {
			b.WriteString(w)
			continue
		}
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}

// luaName is goName's inverse.
func luaName(g string) string {
	s := regexp.MustCompile(`ID|OK|[A-Z][a-z]*`).FindAllString(g, -1)
	return strings.ToUpper(strings.Join(s, "_"))
}

// goConsts evaluates every constant of codes.go.
func goConsts(t *testing.T) map[string]int64 {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("codes", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok {
			v, _ := constant.Int64Val(c.Val())
			out[name] = v
		}
	}
	return out
}
