package script

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/scriptsrc"
	_ "github.com/shardq/shardq/lua" // sets scriptsrc.FS
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

// loadCounter counts the SCRIPT LOAD commands a client sends.
type loadCounter struct{ loads atomic.Int64 }

func (h *loadCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loadCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && strings.EqualFold(fmt.Sprint(a[0]), "script") && strings.EqualFold(fmt.Sprint(a[1]), "load") {
			h.loads.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *loadCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLoadAllSendsOnlyMissing: LoadAll sends the scripts the server lacks
// and no other, so a worker starting against a warm server sends none;
// with the server gone it says so.
func TestLoadAllSendsOnlyMissing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	var h loadCounter
	rdb.AddHook(&h)
	ctx := context.Background()
	all := All()
	if err := all[0].Load(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	h.loads.Store(0)
	if err := LoadAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if got, want := h.loads.Load(), int64(len(all)-1); got != want {
		t.Fatalf("first LoadAll sent %d scripts, want %d: all but the one loaded", got, want)
	}
	hashes := make([]string, len(all))
	for i, s := range all {
		hashes[i] = s.Hash()
	}
	have, err := rdb.ScriptExists(ctx, hashes...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range have {
		if !ok {
			t.Errorf("%s not cached after LoadAll", all[i].Name())
		}
	}
	h.loads.Store(0)
	if err := LoadAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if got := h.loads.Load(); got != 0 {
		t.Fatalf("LoadAll against a warm server sent %d scripts, want none", got)
	}
	srv.Kill(t)
	if err := LoadAll(ctx, rdb); err == nil || !strings.Contains(err.Error(), "lua: ask for") {
		t.Fatalf("LoadAll with the server gone: %v, want the ask's error", err)
	}
}

// TestContractsNameKeysAndArgs: every KEYS[n] and ARGV[n] a script's body
// reads is named in its contract, alone or in a range (ARGV[5..]), unless
// the contract gives another script's ("KEYS: enqueue.lua's"), so a reader
// learns a call's keys and arguments from its head.
func TestContractsNameKeysAndArgs(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(scriptsrc.FS, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := fs.Glob(scriptsrc.FS, "engine/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, engine...)
	named := regexp.MustCompile(`(KEYS|ARGV)\[(\d+)(\.\.(\d*))?\]`)
	used := regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]`)
	for _, file := range files {
		b, err := fs.ReadFile(scriptsrc.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		head, body, ok := strings.Cut(string(b), "]]")
		if !ok {
			t.Errorf("%s: no contract", file)
			continue
		}
		type span struct{ lo, hi int }
		spans := map[string][]span{}
		for _, m := range named.FindAllStringSubmatch(head, -1) {
			lo, _ := strconv.Atoi(m[2])
			hi := lo
			if m[3] != "" {
				hi = 1 << 30
				if m[4] != "" {
					hi, _ = strconv.Atoi(m[4])
				}
			}
			spans[m[1]] = append(spans[m[1]], span{lo, hi})
		}
		for _, m := range used.FindAllStringSubmatch(body, -1) {
			if strings.Contains(head, m[1]+": ") && strings.Contains(head, ".lua's") {
				continue // another script's, named there
			}
			n, _ := strconv.Atoi(m[2])
			covered := false
			for _, s := range spans[m[1]] {
				covered = covered || s.lo <= n && n <= s.hi
			}
			if !covered {
				t.Errorf("%s reads %s, which its contract does not name", file, m[0])
			}
		}
	}
}
