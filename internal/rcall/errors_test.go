package rcall

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
)

// replyError is an error as a server answers it, for messages a single
// server cannot be made to give.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestIsScriptError: errors a script raised while it ran, on a real
// server, are script errors; refusals, answers the script chose and lost
// connections are not.
func TestIsScriptError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.Set(ctx, "s", "abc", 0).Err())
	eval := func(src string, keys ...string) error { return rdb.Eval(ctx, src, keys).Err() }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"LuaError", eval("return string.byte(false)"), true},
		{"ErrorCalled", eval("error('a workflow node is broken', 0)"), true},
		{"ErrorTable", eval("error({err = 'ERR broken'})"), true},
		{"CommandInScript", eval("return redis.call('HGET', KEYS[1], 'x')", "s"), true},
		{"ErrorReply", eval("return redis.error_reply('BUSYKEY chosen')"), false},
		{"CommandAlone", rdb.HGet(ctx, "s", "x").Err(), false},
		{"NoScript", rdb.EvalSha(ctx, "0123456789012345678901234567890123456789", nil).Err(), false},
		{"Wrapped", fmt.Errorf("pop: %w", eval("return string.byte(false)")), true},
		{"NonLocalKey", replyError("ERR Script attempted to access a non local key in a cluster node script: 7b6a, on @user_script:1."), false},
		{"ClusterDown", replyError("ERR Script attempted to execute a write command while the cluster is down and readonly script: 7b6a, on @user_script:1."), false},
		{"OOM", replyError("OOM command not allowed when used memory > 'maxmemory'. script: 7b6a, on @user_script:1."), false},
		{"ReadOnly", replyError("READONLY You can't write against a read only replica. script: 7b6a, on @user_script:1."), false},
		{"NotAReply", errors.New("ERR x script: 7b6a, on @user_script:1."), false},
		{"Nil", nil, false},
	} {
		if got := IsScriptError(c.err); got != c.want {
			t.Errorf("%s: IsScriptError(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	// a lost connection is not one
	must(rdb.Close())
	if err := eval("return string.byte(false)"); err == nil || IsScriptError(err) {
		t.Fatalf("closed client: %v, IsScriptError %v", err, IsScriptError(err))
	}
}

// TestIsOOM: a write a full server refuses (maxmemory under noeviction)
// is OOM, wrapped or not; other refusals and a nil error are not.
func TestIsOOM(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	full := rdb.Set(ctx, "k", "v", 0).Err()
	if !IsOOM(full) || !IsOOM(fmt.Errorf("claim: %w", full)) {
		t.Fatalf("SET on a full server: %v, IsOOM false", full)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{nil, rdb.HGet(ctx, "nope", "x").Err(), replyError("READONLY You can't write against a read only replica."),
		replyError("ERR OOM in the key's name")} {
		if IsOOM(err) {
			t.Errorf("IsOOM(%v) = true", err)
		}
	}
}
