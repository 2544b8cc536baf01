package lua

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
)

type listSetup struct {
	rdb  *redis.Client
	list *ShardedList
	base string
}

func setupList(t *testing.T, shardSize int) listSetup {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	base := "{" + redistest.Prefix(t) + "}"
	l, err := NewShardedList(base, shardSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*rcall.Script{shardedPush, shardedPop, shardedLen, shardedBlock} {
		if err := s.Load(context.Background(), rdb); err != nil {
			t.Fatal(err)
		}
	}
	return listSetup{rdb: rdb, list: l, base: base}
}

func TestShardedList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FIFOAcrossShards", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 3)
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprint(i))
		}
		if err := s.list.Push(ctx, s.rdb, Right, want[:7]...); err != nil {
			t.Fatal(err)
		}
		if err := s.list.Push(ctx, s.rdb, Right, want[7:]...); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.rdb.LLen(ctx, s.list.shardKey(3)).Result(); n != 1 {
			t.Fatalf("shard 3 holds %d items, want 1 (shards of 3)", n)
		}
		got, err := s.list.Pop(ctx, s.rdb, Left, 100)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("popped %v, want %v", got, want)
		}
		if n, _ := s.list.Len(ctx, s.rdb); n != 0 {
			t.Fatalf("Len after draining = %d", n)
		}
	})

	t.Run("SingleTailPushesNeverOverfillAShard", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 3)
		// one item at a time, as single enqueues push: the push that fills
		// a shard moves the tail pointer on
		for i := range 7 {
			must(t, s.list.Push(ctx, s.rdb, Right, fmt.Sprint(i)))
		}
		for shard, want := range []int64{3, 3, 1} {
			if n := s.rdb.LLen(ctx, s.list.shardKey(int64(shard))).Val(); n != want {
				t.Fatalf("shard %d holds %d, want %d", shard, n, want)
			}
		}
		// a head push that fills the tail shard (first == last): the next
		// single tail push goes on to a new shard, never a fourth item
		s2 := setupList(t, 3)
		must(t, s2.list.Push(ctx, s2.rdb, Right, "c"))
		must(t, s2.list.Push(ctx, s2.rdb, Left, "a", "b"))
		must(t, s2.list.Push(ctx, s2.rdb, Right, "d"))
		if n := s2.rdb.LLen(ctx, s2.list.shardKey(0)).Val(); n != 3 {
			t.Fatalf("shard 0 holds %d, want 3", n)
		}
		got, err := s2.list.Pop(ctx, s2.rdb, Left, 10)
		must(t, err)
		if strings.Join(got, "") != "abcd" {
			t.Fatalf("popped %v, want a b c d", got)
		}
	})

	t.Run("BothEnds", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 2)
		must(t, s.list.Push(ctx, s.rdb, Right, "c", "d", "e"))
		must(t, s.list.Push(ctx, s.rdb, Left, "a", "b")) // read from the left: a, b, c, ...
		if n, _ := s.list.Len(ctx, s.rdb); n != 5 {
			t.Fatalf("Len = %d, want 5", n)
		}
		right, err := s.list.Pop(ctx, s.rdb, Right, 2)
		must(t, err)
		left, err := s.list.Pop(ctx, s.rdb, Left, 10)
		must(t, err)
		if strings.Join(right, "") != "ed" || strings.Join(left, "") != "abc" {
			t.Fatalf("right pop %v, left pop %v; want [e d] and [a b c]", right, left)
		}
	})

	t.Run("PopLoopsPastManyEmptiedShards", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 1)
		must(t, s.list.Push(ctx, s.rdb, Right, "a", "b", "c", "d", "e"))
		// Empty the middle shards behind the list's back, as consumers that
		// crashed mid-way could leave them; pop must step past every one.
		for n := int64(0); n < 4; n++ {
			must(t, s.rdb.Del(ctx, s.list.shardKey(n)).Err())
		}
		got, err := s.list.Pop(ctx, s.rdb, Left, 3)
		must(t, err)
		if strings.Join(got, "") != "e" {
			t.Fatalf("popped %v, want [e]", got)
		}
	})

	t.Run("EmptyPop", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 5)
		got, err := s.list.Pop(ctx, s.rdb, Left, 10)
		if err != nil || len(got) != 0 {
			t.Fatalf("Pop on empty list = %v, %v", got, err)
		}
	})

	t.Run("DummyNeverReturnedNorCounted", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 4)
		must(t, s.list.Push(ctx, s.rdb, Right, "a", "b"))
		// A dummy left in a live shard by a helper whose move never ran.
		must(t, s.rdb.LPush(ctx, s.list.shardKey(0), dummy).Err())
		if n, err := s.list.Len(ctx, s.rdb); err != nil || n != 2 {
			t.Fatalf("Len with a dummy in the first shard = %d, %v; want 2", n, err)
		}
		got, err := s.list.Pop(ctx, s.rdb, Left, 10)
		must(t, err)
		if strings.Join(got, ",") != "a,b" {
			t.Fatalf("popped %q, want [a b] without the dummy", got)
		}
	})

	t.Run("InvalidShardSize", func(t *testing.T) {
		if _, err := NewShardedList("{x}", -1); err == nil {
			t.Fatal("negative shard size accepted")
		}
		if _, err := NewShardedList("{x}", 1_000_000); err == nil {
			t.Fatal("shard size above the Lua unpack bound accepted")
		}
	})
}

// TestShardedListConcurrentFIFO runs producers and consumers at once over
// tiny shards. Consumers pop with a destination list, so the destination
// records the order in which Redis served the pops: every producer's items
// must appear there once each, in the order it pushed them.
func TestShardedListConcurrentFIFO(t *testing.T) {
	t.Parallel()
	s := setupList(t, 5)
	ctx := context.Background()
	const producers, perProducer, consumers = 4, 400, 4
	log := s.base + ":log"

	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; {
				n := min(1+rand.IntN(9), perProducer-i)
				batch := make([]string, n)
				for k := range batch {
					batch[k] = fmt.Sprintf("%d:%d", p, i+k)
				}
				if err := s.list.Push(ctx, s.rdb, Right, batch...); err != nil {
					t.Error(err)
					return
				}
				i += n
			}
		}()
	}
	var popped sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for range consumers {
		popped.Add(1)
		go func() {
			defer popped.Done()
			for time.Now().Before(deadline) {
				n, err := s.rdb.LLen(ctx, log).Result()
				if err != nil || n >= producers*perProducer {
					return
				}
				if _, _, err := s.list.pop(ctx, s.rdb, Left, 1+rand.IntN(6), log); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	popped.Wait()

	got, err := s.rdb.LRange(ctx, log, 0, -1).Result()
	must(t, err)
	next := make([]int, producers)
	for _, item := range got {
		if item == dummy {
			t.Fatal("a dummy was popped")
		}
		var p, i int
		if _, err := fmt.Sscanf(item, "%d:%d", &p, &i); err != nil {
			t.Fatalf("unexpected item %q", item)
		}
		if i != next[p] {
			t.Fatalf("producer %d: got item %d, want %d (lost, duplicated or out of order)", p, i, next[p])
		}
		next[p]++
	}
	for p, n := range next {
		if n != perProducer {
			t.Errorf("producer %d: %d of %d items popped", p, n, perProducer)
		}
	}
	if n, _ := s.list.Len(ctx, s.rdb); n != 0 {
		t.Errorf("Len after draining = %d", n)
	}
}

func TestBlockingPop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// An item pushed while the reader blocks is what its blocking move
	// returns: the reader wakes on the push, not at a later look.
	t.Run("WakesOnPush", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 3)
		moves := watchMoves(s.rdb)
		dest := s.base + ":inflight"
		go func() {
			for !moves.blocking() {
				time.Sleep(time.Millisecond)
			}
			_ = s.list.Push(ctx, s.rdb, Right, "x")
		}()
		item, ok, err := s.list.BlockingPop(ctx, s.rdb, Left, dest, time.Minute)
		if err != nil || !ok || item != "x" {
			t.Fatalf("BlockingPop = %q, %v, %v", item, ok, err)
		}
		if got := moves.results(); got[len(got)-1] != "x" {
			t.Fatalf("blocking moves returned %q: the reader did not wake on the push", got)
		}
		assertList(t, s.rdb, dest, "x")
	})

	t.Run("TimesOut", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 3)
		start := time.Now()
		_, ok, err := s.list.BlockingPop(ctx, s.rdb, Left, s.base+":inflight", 1500*time.Millisecond)
		if err != nil || ok {
			t.Fatalf("BlockingPop on an empty list = ok %v, err %v", ok, err)
		}
		// 1.5s to 2s: whole-second slices; the upper bound only says it
		// did not block for good
		if d := time.Since(start); d < 1400*time.Millisecond || d > 20*time.Second {
			t.Fatalf("timed out after %v, want 1.5s to 2s (whole-second slices)", d)
		}
	})

	// A reader that decided to block on a shard the end pointer has since
	// left gets a dummy at once and looks again; the dummy never reaches it
	// and does not stay in its destination.
	t.Run("StaleShardGetsDummy", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 2)
		dest := s.base + ":inflight"
		must(t, s.list.Push(ctx, s.rdb, Right, "a", "b", "c", "d", "e"))
		_, err := s.list.Pop(ctx, s.rdb, Left, 4) // first moves to shard 2, which holds "e"
		must(t, err)
		moves := watchMoves(s.rdb)
		_, err = s.list.blockSlice(ctx, s.rdb, Left, 0, dest)
		if err != redis.Nil {
			t.Fatalf("slice on stale shard 0: err = %v, want redis.Nil (dummy)", err)
		}
		// the move returned the dummy at once, not nothing after its second
		if got := moves.results(); len(got) != 1 || got[0] != dummy {
			t.Fatalf("the stale slice's move returned %q, want the dummy", got)
		}
		assertList(t, s.rdb, dest)
		item, ok, err := s.list.BlockingPop(ctx, s.rdb, Left, dest, time.Second)
		if err != nil || !ok || item != "e" {
			t.Fatalf("BlockingPop = %q, %v, %v; want e", item, ok, err)
		}
		assertList(t, s.rdb, dest, "e")
		if n, _ := s.list.Len(ctx, s.rdb); n != 0 {
			t.Fatalf("Len = %d after draining, want 0 (dummy counted?)", n)
		}
	})

	// The end shard moves between the reader's look at the pointers and its
	// block (producers roll past a full shard, other consumers drain it).
	// The helper sees the reader's shard is stale and wakes it with a dummy,
	// so an item pushed afterwards reaches it at once, not after a slice.
	t.Run("EndShardMovesBeforeBlock", func(t *testing.T) {
		t.Parallel()
		s := setupList(t, 2)
		dest := s.base + ":inflight"
		moved := false
		s.list.beforeBlock = func(shard int64) {
			if moved {
				return
			}
			moved = true
			must(t, s.list.Push(ctx, s.rdb, Right, "m1", "m2", "m3")) // rolls to shard 1
			got, err := s.list.Pop(ctx, s.rdb, Left, 3)               // first moves to shard 1
			must(t, err)
			if len(got) != 3 || shard != 0 {
				t.Errorf("setup: popped %v, reader about to block on shard %d", got, shard)
			}
		}
		type result struct {
			item string
			ok   bool
			err  error
			at   time.Time
		}
		moves := watchMoves(s.rdb)
		done := make(chan result, 1)
		go func() {
			item, ok, err := s.list.BlockingPop(ctx, s.rdb, Left, dest, time.Minute)
			done <- result{item, ok, err, time.Now()}
		}()
		// push once the reader blocks again, after its first move ended
		for len(moves.results()) == 0 || !moves.blocking() {
			time.Sleep(time.Millisecond)
		}
		must(t, s.list.Push(ctx, s.rdb, Right, "late"))
		r := <-done
		if r.err != nil || !r.ok || r.item != "late" {
			t.Fatalf("BlockingPop = %q, %v, %v; want late", r.item, r.ok, r.err)
		}
		// the move on the stale shard returned the dummy at once, and the
		// next, on the new end shard, returned the late item
		if got := moves.results(); len(got) != 2 || got[0] != dummy || got[1] != "late" {
			t.Fatalf("the reader's blocking moves returned %q, want the dummy, then late", got)
		}
		assertList(t, s.rdb, dest, "late")
		if n, _ := s.list.Len(ctx, s.rdb); n != 0 {
			t.Fatalf("Len = %d after draining, want 0", n)
		}
	})
}

func assertList(t *testing.T, rdb *redis.Client, key string, want ...string) {
	t.Helper()
	got, err := rdb.LRange(context.Background(), key, 0, -1).Result()
	must(t, err)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("%s holds %q, want %q", key, got, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// moveWatch records the blocking moves (BLMOVE) a client sends: how many
// wait now, and what each returned ("" for nothing).
type moveWatch struct {
	mu       sync.Mutex
	inFlight int
	returned []string
}

// watchMoves adds a moveWatch to rdb.
func watchMoves(rdb *redis.Client) *moveWatch {
	w := &moveWatch{}
	rdb.AddHook(w)
	return w
}

func (w *moveWatch) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (w *moveWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (w *moveWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var moves []*redis.StringCmd
		for _, c := range cmds {
			if sc, ok := c.(*redis.StringCmd); ok && strings.EqualFold(c.Name(), "blmove") {
				moves = append(moves, sc)
			}
		}
		w.mu.Lock()
		w.inFlight += len(moves)
		w.mu.Unlock()
		err := next(ctx, cmds)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.inFlight -= len(moves)
		for _, m := range moves {
			w.returned = append(w.returned, m.Val())
		}
		return err
	}
}

func (w *moveWatch) blocking() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inFlight > 0
}

func (w *moveWatch) results() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.returned...)
}
