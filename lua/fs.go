package lua

import (
	"embed"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/scriptsrc"
)

// files holds every Lua script of shardq: one .lua file per atomic
// operation, each opening with its contract (KEYS, ARGV, Returns), and the
// shared pieces they pull in with "--@include name" under include/. The
// primitives of this package have theirs here; the engine's scripts and
// their own includes are under engine/, and the engine gets them through
// internal/scriptsrc, outside this package's API.
//
//go:embed *.lua include/*.lua engine/*.lua engine/include/*.lua
var files embed.FS

func init() { scriptsrc.FS = files }

// The primitives' own scripts, resolved once at start-up.
var (
	shardedPush  = mustResolve("sharded_push")
	shardedPop   = mustResolve("sharded_pop")
	shardedLen   = mustResolve("sharded_len")
	shardedBlock = mustResolve("sharded_block")
	feedAppend   = mustResolve("feed_append")
	feedRead     = mustResolve("feed_read")
	counterIncr  = mustResolve("counter_incr")
	semAcquire   = mustResolve("sem_acquire")
	semRefresh   = mustResolve("sem_refresh")
	semRelease   = mustResolve("sem_release")
)

func mustResolve(name string) *rcall.Script {
	src, err := rcall.Resolve(files, name)
	if err != nil {
		panic(err) // embedded files are part of the build: a test fails first
	}
	return rcall.NewScript(name, src)
}
