package lua

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
)

// TestScriptCacheFlush: a flushed script cache (SCRIPT FLUSH, a restarted
// Redis) is recovered transparently by Run, by Pipelined, and by the
// blocking pop, between calls and in the middle of pipelines.
func TestScriptCacheFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	l, _ := NewShardedList("{"+redistest.Prefix(t)+"}", 10)

	t.Run("BetweenCalls", func(t *testing.T) {
		must(t, l.Push(ctx, rdb, Right, "a"))
		must(t, rdb.ScriptFlush(ctx).Err())
		must(t, l.Push(ctx, rdb, Right, "b"))
		must(t, rdb.ScriptFlush(ctx).Err())
		got, err := l.Pop(ctx, rdb, Left, 5)
		if err != nil || fmt.Sprint(got) != "[a b]" {
			t.Fatalf("Pop after flush = %v, %v", got, err)
		}
	})

	t.Run("PreparedCall", func(t *testing.T) {
		// the same call, its keys and leading arguments boxed once, run
		// before and after a flush, and with different trailing items
		call := shardedPush.Prepare(l.keys(), l.prefix(), l.size(), "R")
		must(t, call.Run(ctx, rdb, "p1").Err())
		must(t, rdb.ScriptFlush(ctx).Err())
		n, err := call.Run(ctx, rdb, "p2", "p3").Int64()
		if err != nil || n != 2 {
			t.Fatalf("prepared call after flush = %d, %v; want 2 items pushed", n, err)
		}
		got, err := l.Pop(ctx, rdb, Left, 5)
		if err != nil || fmt.Sprint(got) != "[p1 p2 p3]" {
			t.Fatalf("Pop after prepared pushes = %v, %v", got, err)
		}
	})

	t.Run("PreparedKeys", func(t *testing.T) {
		// a key given with each call: declared as a key (the script sees
		// it in KEYS, before the arguments), after a flush too
		s := rcall.NewScript("keys-later", "return {#KEYS, KEYS[2], ARGV[1]}")
		call := s.PrepareKeys([]string{l.Base + ":a"}, 1)
		for i := range 2 {
			got, err := call.Run(ctx, rdb, fmt.Sprint(l.Base, ":b", i), "arg").Slice()
			if err != nil || fmt.Sprint(got) != fmt.Sprintf("[2 %s:b%d arg]", l.Base, i) {
				t.Fatalf("call %d = %v, %v; want 2 keys, the later one second, then the argument", i, got, err)
			}
			must(t, rdb.ScriptFlush(ctx).Err())
		}
	})

	t.Run("ReusedArgs", func(t *testing.T) {
		// one argument slice, its slots filled anew for each call, one of
		// them a pointer read at each call: a flush between calls sends an
		// EVAL of a copy and leaves the slice as it was
		s := rcall.NewScript("reused-args", "return {KEYS[2], ARGV[1], ARGV[2]}")
		call := s.PrepareKeys([]string{l.Base + ":a"}, 1)
		args := call.Args(3)
		var arg string
		args[len(args)-1] = &arg
		for i := range 3 {
			args[len(args)-3], args[len(args)-2], arg = fmt.Sprint(l.Base, ":k", i), i, fmt.Sprint("v", i)
			got, err := call.RunArgs(ctx, rdb, args).Slice()
			if want := fmt.Sprintf("[%s:k%d %d v%d]", l.Base, i, i, i); err != nil || fmt.Sprint(got) != want {
				t.Fatalf("call %d = %v, %v; want %s", i, got, err, want)
			}
			if args[0] != "evalsha" || args[1] != s.Hash() {
				t.Fatalf("after call %d the slice opens %v %v: RunArgs changed it", i, args[0], args[1])
			}
			must(t, rdb.ScriptFlush(ctx).Err())
		}
	})

	t.Run("BeforePipeline", func(t *testing.T) {
		must(t, rdb.ScriptFlush(ctx).Err())
		var cmds []*redis.Cmd
		err := rcall.Pipelined(ctx, rdb, func(p *rcall.Pipe) error {
			for i := range 5 {
				cmds = append(cmds, p.Run(ctx, shardedPush, l.keys(), l.prefix(), l.size(), "R", fmt.Sprint(i)))
			}
			p.Set(ctx, l.Base+":plain", "v", 0)
			return nil
		})
		if err != nil {
			t.Fatalf("Pipelined after flush: %v", err)
		}
		for _, c := range cmds {
			if n, err := c.Int64(); err != nil || n != 1 {
				t.Fatalf("script cmd = %d, %v", n, err)
			}
		}
		got, _ := l.Pop(ctx, rdb, Left, 10)
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Fatalf("items %v: a rerun changed order or count", got)
		}
	})

	// Another connection flushes the cache over and over while pipelines of
	// script calls and blocking pops run: no caller sees an error, nothing is
	// lost or duplicated, and no dummy comes back.
	t.Run("WhilePipelinesRun", func(t *testing.T) {
		var stop atomic.Bool
		var flushes atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := rdb.ScriptFlush(ctx).Err(); err == nil {
					flushes.Add(1)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		const rounds, per = 200, 10
		for r := range rounds {
			err := rcall.Pipelined(ctx, rdb, func(p *rcall.Pipe) error {
				for i := range per {
					p.Run(ctx, shardedPush, l.keys(), l.prefix(), l.size(), "R", fmt.Sprintf("%d-%d", r, i))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		dest := l.Base + ":inflight"
		seen := map[string]bool{}
		for len(seen) < rounds*per {
			item, ok, err := l.BlockingPop(ctx, rdb, Left, dest, time.Second)
			if err != nil {
				t.Fatalf("BlockingPop under flushes: %v", err)
			}
			if !ok {
				t.Fatalf("BlockingPop timed out with %d of %d items", len(seen), rounds*per)
			}
			if item == dummy || seen[item] {
				t.Fatalf("BlockingPop returned %q (dummy or duplicate)", item)
			}
			seen[item] = true
		}
		stop.Store(true)
		wg.Wait()
		if flushes.Load() < 10 {
			t.Fatalf("only %d flushes happened: the test proved little", flushes.Load())
		}
		if n := rdb.LLen(ctx, dest).Val(); n != rounds*per {
			t.Fatalf("dest holds %d items, want %d", n, rounds*per)
		}
	})
}
