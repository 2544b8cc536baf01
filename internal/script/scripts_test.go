package script

import (
	"context"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

// TestEveryScriptLoads compiles every embedded script in a real Redis, so a
// syntax error or a bad shebang flag fails here, and checks each opens with
// its contract.
func TestEveryScriptLoads(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	if len(All()) < 10 {
		t.Fatalf("only %d scripts embedded", len(All()))
	}
	for _, s := range All() {
		sha, err := rdb.ScriptLoad(ctx, s.Source()).Result()
		if err != nil {
			t.Errorf("%s: %v", s.Name(), err)
			continue
		}
		if sha != s.Hash() {
			t.Errorf("%s: server sha %s, ours %s", s.Name(), sha, s.Hash())
		}
		if !strings.HasPrefix(s.Source(), "#!lua") || !strings.Contains(s.Source(), "--[[ "+s.Name()+":") {
			t.Errorf("%s: does not open with a shebang and its --[[ %s: ... ]] contract", s.Name(), s.Name())
		}
		if !strings.Contains(s.Source(), "Returns:") {
			t.Errorf("%s: contract does not say what it returns", s.Name())
		}
	}
	if err := LoadAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
}
