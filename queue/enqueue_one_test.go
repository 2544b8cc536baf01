package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// TestEnqueueOne drives the single plain Enqueue (enqueue_one.lua) through
// every kind of tail guess on a queue with shards of 4: right, stale into a
// full shard, into a shard that is gone, into the head while it drains, and
// one that fills the tail.
func TestEnqueueOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{ShardSize: 4})
	k := keys.For(b.cfg.Prefix, "q", 0)
	enqueue := func(name string) *TaskInfo {
		t.Helper()
		in, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(name), In("q")))
		if err != nil {
			t.Fatalf("enqueue %s: %v", name, err)
		}
		return in
	}
	lens := func() []int64 {
		t.Helper()
		var out []int64
		for n := range 4 {
			l, err := b.rdb.LLen(ctx, fmt.Sprint(k.T, ":s:", n)).Result()
			must(t, err)
			out = append(out, l)
		}
		return out
	}
	want := func(step string, shards []int64, last, guess int64) {
		t.Helper()
		got := lens()
		l, _ := b.rdb.Get(ctx, k.Last()).Int64()
		g := b.client.prepared("q", 0).tail.Load()
		if fmt.Sprint(got) != fmt.Sprint(shards) || l != last || g != guess {
			t.Fatalf("%s: shards %v, T:last %d, guess %d; want %v, %d, %d", step, got, l, g, shards, last, guess)
		}
	}
	for i := range 9 {
		enqueue(fmt.Sprint("t", i))
	}
	want("nine tasks", []int64{4, 4, 1, 0}, 2, 2)

	b.client.prepared("q", 0).tail.Store(1)
	enqueue("stale")
	want("a guess into a full shard", []int64{4, 4, 2, 0}, 2, 2)

	b.client.prepared("q", 0).tail.Store(7)
	enqueue("gone")
	want("a guess into a shard that is gone", []int64{4, 4, 3, 0}, 2, 2)

	// a worker took two from the head: a guess there lands in the head
	// and leaves the tail pointer alone, even when it fills the head
	must(t, b.rdb.LPopCount(ctx, k.T+":s:0", 2).Err())
	b.client.prepared("q", 0).tail.Store(0)
	head := enqueue("head")
	want("a guess into the draining head", []int64{3, 4, 3, 0}, 2, 0)
	got, err := b.insp.GetTask(ctx, "q", head.ID)
	if err != nil || got.State != StatePending || string(got.Payload) != "head" {
		t.Fatalf("GetTask of the task in the head = %+v, %v; want it pending with its payload", got, err)
	}
	enqueue("fills the head")
	want("a push that fills the head", []int64{4, 4, 3, 0}, 2, 0)
	enqueue("after the full head")
	want("a guess into the full head", []int64{4, 4, 4, 0}, 3, 3)
	enqueue("next shard")
	want("after the tail filled", []int64{4, 4, 4, 1}, 3, 3)

	// a queue deleted and made again: the guess is gone, the tail is 0
	must(t, b.insp.DeleteQueue(ctx, "q", true))
	enqueue("again")
	enqueue("again 2")
	want("after DeleteQueue", []int64{2, 0, 0, 0}, 0, 0)
}

// TestEnqueueOneClosedPartition checks that a closed partition refuses the
// single Enqueue's script before any write, that a producer whose layout
// is stale puts the task elsewhere, and that reopening restores the rank
// counter the close marked.
func TestEnqueueOneClosedPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{Partitions: map[string]int{"q": 2}})
	for i := 0; i < 100; i++ {
		in, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
		must(t, err)
		if in.Partition == 1 && i >= 10 {
			break
		}
	}
	k := keys.For(b.cfg.Prefix, "q", 1)
	rank, err := b.rdb.Get(ctx, keys.RankKey(k.Feed())).Int64()
	must(t, err)
	if err := b.insp.SetPartitions(ctx, "q", 1); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.rdb.Get(ctx, keys.RankKey(k.Feed())).Result(); v != fmt.Sprint("closed:", rank) {
		t.Fatalf("the closed partition's rank counter holds %q, want closed:%d", v, rank)
	}
	pending := func() int64 {
		n, err := b.rdb.LLen(ctx, k.T+":s:0").Result()
		must(t, err)
		return n
	}
	before := pending()
	reply, err := script.EnqueueOne.Run(ctx, b.rdb, oneKeys(k, k.ShardPrefix()+"0"),
		packLimits(1000, 100), oneMsg(t, "id-closed")).Int64()
	if err != nil || reply != codes.EnqClosed {
		t.Fatalf("enqueue_one on a closed partition = %v, %v; want %d", reply, err, codes.EnqClosed)
	}
	if pending() != before {
		t.Fatal("enqueue_one wrote to a closed partition")
	}
	// the producer still routes to both partitions (its layout is fresh for
	// LayoutRefresh): every task lands in partition 0
	for i := range 20 {
		in, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
		if err != nil {
			t.Fatalf("enqueue %d while partition 1 is closed: %v", i, err)
		}
		if in.Partition != 0 {
			t.Fatalf("task %d went to closed partition %d", i, in.Partition)
		}
	}
	if pending() != before {
		t.Fatal("a task reached the closed partition")
	}
	// the arrival rate reads through the marker
	sample, err := script.RateSample.Run(ctx, b.rdb, []string{keys.RankKey(k.Feed()), k.RateSamples()}, "", 1000).Int64Slice()
	if err != nil || sample[1] != rank {
		t.Fatalf("rate_sample on a closed partition = %v, %v; want the count %d", sample, err, rank)
	}
	// reopened, ranks go on from where they were
	if err := b.insp.SetPartitions(ctx, "q", 2); err != nil {
		t.Fatal(err)
	}
	if v, err := b.rdb.Get(ctx, keys.RankKey(k.Feed())).Int64(); err != nil || v != rank {
		t.Fatalf("the reopened rank counter = %d, %v; want %d", v, err, rank)
	}
	reply, err = script.EnqueueOne.Run(ctx, b.rdb, oneKeys(k, k.ShardPrefix()+strconv.Itoa(codes.None)),
		packLimits(1000, 100), oneMsg(t, "id-open")).Int64()
	if err != nil || reply < 0 {
		t.Fatalf("enqueue_one on the reopened partition = %v, %v", reply, err)
	}
	if s, err := b.rdb.ZScore(ctx, k.Feed(), "id-open").Result(); err != nil || int64(s) != rank+1 {
		t.Fatalf("the reopened partition ranked its next task %v, %v; want %d", s, err, rank+1)
	}
}

// TestEnqueueOneCommands counts the Redis commands of single Enqueues in
// the steady state: the script call and the three it runs, and rarely a
// roll or a trim.
func TestEnqueueOneCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	for range 2 {
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil))
		must(t, err)
	}
	before := commandCalls(t, b.rdb)
	const n = 500
	for range n {
		_, err := b.client.Enqueue(ctx, NewRawTask("t", make([]byte, 100)))
		must(t, err)
	}
	if per := float64(commandCalls(t, b.rdb)-before) / n; per > 4.05 {
		t.Fatalf("%.2f Redis commands per single Enqueue, want at most 4 (EVALSHA, INCRBY, RPUSHX, ZADD)", per)
	}
}

// TestEnqueueOneAllocations bounds a single Enqueue's allocations at what
// BenchmarkEnqueue/producers=1 reports (BENCHMARKS.md): a route read
// through iterators, or a closure that escapes, shows here first. make
// check runs it without -race, under which it skips.
func TestEnqueueOneAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("-race: sync.Pool drops items at random, so allocations vary; make check runs this without it")
	}
	ctx := context.Background()
	b := setup(t, Config{})
	payload := make([]byte, 100)
	enqueue := func() {
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", payload)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		enqueue() // the script loaded, the queue registered, the tail guessed
	}
	const most = 10
	if n := testing.AllocsPerRun(200, enqueue); n > most {
		t.Fatalf("a single Enqueue makes %.1f allocations, want at most %d", n, most)
	}
}

// TestPlainCallLearn checks how the guess follows replies that arrive in
// any order.
func TestPlainCallLearn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cur, guess, tail int64
		hit              bool
		want             int64
	}{
		{cur: -1, guess: -1, tail: 0, want: 0},           // the first reply
		{cur: 3, guess: 3, tail: 4, hit: true, want: 4},  // the tail moved on
		{cur: 5, guess: 3, tail: 4, hit: true, want: 5},  // a later reply came first
		{cur: 7, guess: 7, tail: 2, hit: false, want: 2}, // a guess that missed: corrected
		{cur: 9, guess: 7, tail: 2, hit: false, want: 9}, // corrected since by another reply
		{cur: 3, guess: 3, tail: 3, hit: true, want: 3},  // nothing new
		{cur: 3, guess: 0, tail: 0, hit: true, want: 3},  // a push into the head: the tail stays
	} {
		var pc plainCall
		pc.tail.Store(c.cur)
		pc.learn(c.guess, c.tail, c.hit)
		if got := pc.tail.Load(); got != c.want {
			t.Errorf("learn(guess %d, tail %d, hit %v) from %d = %d, want %d", c.guess, c.tail, c.hit, c.cur, got, c.want)
		}
	}
}

// TestEnqueueOneCorruptRankCounter checks that a rank counter holding
// neither a count nor the closed mark fails the enqueue with an error that
// names the key, and writes nothing.
func TestEnqueueOneCorruptRankCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	k := keys.For(b.cfg.Prefix, "q", 0)
	must(t, b.rdb.Set(ctx, keys.RankKey(k.Feed()), "garbage", 0).Err())
	_, err := script.EnqueueOne.Run(ctx, b.rdb, oneKeys(k, k.ShardPrefix()+strconv.Itoa(codes.None)),
		packLimits(1000, 100), oneMsg(t, "id")).Result()
	if err == nil || !strings.Contains(err.Error(), keys.RankKey(k.Feed())) || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("enqueue_one on a corrupt rank counter = %v, want an error naming %s", err, keys.RankKey(k.Feed()))
	}
	if n, _ := b.rdb.LLen(ctx, k.T+":s:0").Result(); n != 0 {
		t.Fatalf("the failed enqueue left %d tasks pending", n)
	}
}

// TestEnqueueOneHandsOver checks the single Enqueues that leave the
// script's common call for its general part after the guessed push: a
// feed trim falling due (a feed of 32 trims every second rank), a task
// with a group (it keeps its message copy) and a push that fills
// the tail. Each keeps its task, its feed entry and the feed's cap.
func TestEnqueueOneHandsOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{ShardSize: 8, FeedSize: 32})
	k := keys.For(b.cfg.Prefix, "q", 0)
	var ids []string
	for i := range 40 {
		opts := []Option{In("q")}
		if i%10 == 4 { // odd ranks: no trim due
			opts = append(opts, Group("tenant"))
		}
		in, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(fmt.Sprint("p", i)), opts...))
		must(t, err)
		ids = append(ids, in.ID)
		if n, err := b.rdb.ZCard(ctx, k.Feed()).Result(); err != nil || n > 33 {
			t.Fatalf("after %d enqueues the feed holds %d, %v; want at most 33 (cap 32, trimmed every second rank)", i+1, n, err)
		}
	}
	var pending int64
	for n := range 6 {
		l, err := b.rdb.LLen(ctx, fmt.Sprint(k.T, ":s:", n)).Result()
		must(t, err)
		if l > 8 {
			t.Fatalf("shard %d holds %d, over the shard size 8", n, l)
		}
		pending += l
	}
	// the keyed tasks wait in their key's list
	keyed, err := b.rdb.Get(ctx, k.FairCount()).Int64()
	must(t, err)
	if pending != 36 || keyed != 4 {
		t.Fatalf("%d tasks pending and %d in their key's list, want 36 and 4", pending, keyed)
	}
	if rank, err := b.rdb.Get(ctx, keys.RankKey(k.Feed())).Int64(); err != nil || rank != 40 {
		t.Fatalf("rank counter %d, %v; want 40", rank, err)
	}
	// the newest keyed task is in the feed with its message copy; every
	// task still in the feed reads back with its payload
	if ok, err := b.rdb.HExists(ctx, k.FeedMsg(), wire.StoredID(ids[34])).Result(); err != nil || !ok {
		t.Fatalf("the keyed task's message copy: %v, %v; want it kept", ok, err)
	}
	for i := 10; i < 40; i++ {
		got, err := b.insp.GetTask(ctx, "q", ids[i])
		if err != nil || string(got.Payload) != fmt.Sprint("p", i) {
			t.Fatalf("GetTask of task %d = %+v, %v; want its payload p%d", i, got, err, i)
		}
	}
}

// oneKeys returns enqueue_one.lua's keys for partition k with the guessed
// shard's key.
func oneKeys(k keys.Partition, guess string) []string {
	return []string{k.Feed(), keys.RankKey(k.Feed()), k.Guard(), guess}
}

// oneMsg returns a plain task's message with ID id, as enqueue_one.lua
// takes it (the ID is read from the message).
func oneMsg(t *testing.T, id string) []byte {
	t.Helper()
	b, err := (&wire.Message{ID: id, Type: "t"}).Encode()
	must(t, err)
	return b
}

// TestEnqueueOneBoundedByContext: the single Enqueue's short path returns
// when its context ends, on a client that bounds reads by the context
// (the call runs on the caller's goroutine) and on one that does not (the
// call runs beside it): a deadline on a hung Redis gives DeadlineExceeded,
// a context already cancelled gives its cause at once.
func TestEnqueueOneBoundedByContext(t *testing.T) {
	t.Parallel()
	for _, bounded := range []bool{true, false} {
		t.Run(fmt.Sprint("ContextTimeoutEnabled=", bounded), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, Config{})
			o := b.srv.Options()
			o.ContextTimeoutEnabled = bounded
			o.MaxRetries = -1
			rdb := redis.NewClient(o)
			t.Cleanup(func() { _ = rdb.Close() })
			client, err := NewClient(rdb, b.cfg)
			must(t, err)
			for range 2 { // registered, its layout read: the short path from here on
				_, err := client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
				must(t, err)
			}
			if client.prepared("q", 0).tail.Load() < 0 {
				t.Fatal("the warm-up did not take the short path")
			}

			cause := errors.New("the caller gave up")
			cctx, cancel := context.WithCancelCause(ctx)
			cancel(cause)
			if _, err := client.Enqueue(cctx, NewRawTask("t", nil, In("q"))); !errors.Is(err, cause) {
				t.Fatalf("Enqueue on a cancelled context = %v, want its cause", err)
			}

			b.srv.Pause(t)
			resumed := false
			defer func() {
				if !resumed {
					b.srv.Resume(t)
				}
			}()
			dctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
			defer stop()
			start := time.Now()
			_, err = client.Enqueue(dctx, NewRawTask("t", nil, In("q")))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Enqueue on a hung Redis = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("returned after %v, want about 300ms", d)
			}

			// Redis wakes: the call given up on still lands, once (it is
			// never resent), and the client goes on with the next
			b.srv.Resume(t)
			resumed = true
			waitPending(t, b, 3)
			// the abandoned call's goroutine ends now, with nothing that
			// orders it after its caller's return, unlike the client's next
			// call: -race sees anything it writes that its caller read
			time.Sleep(50 * time.Millisecond)
			_, err = client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
			must(t, err)
			waitPending(t, b, 4)
		})
	}
}

// waitPending waits up to 5 s for queue q to hold want pending tasks,
// failing at once on more.
func waitPending(t *testing.T, b *bundle, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := b.insp.QueueInfo(context.Background(), "q")
		must(t, err)
		if info.Pending == want {
			return
		}
		if info.Pending > want || time.Now().After(deadline) {
			t.Fatalf("%d tasks pending, want %d", info.Pending, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEnqueueOneReusesNothingInUse: single Enqueues from many goroutines
// into three partitions, their payloads of sizes that make the reused
// message buffers grow (and one too large to keep), each read back by the
// ID its Enqueue returned: every task holds its own payload, so no frame
// or buffer was shared by two calls at once.
func TestEnqueueOneReusesNothingInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{Partitions: map[string]int{"q": 3}})
	const producers, each = 8, 60
	ids := make([][]string, producers)
	payload := func(g, i int) []byte {
		size := []int{1, 40, 300, 2000, 9000}[(g+i)%5]
		p := []byte(fmt.Sprintf("%d-%d:", g, i))
		for len(p) < size {
			p = append(p, byte('a'+(g+i+len(p))%26))
		}
		return p
	}
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				info, err := b.client.Enqueue(ctx, NewRawTask("t", payload(g, i), In("q")))
				if err != nil {
					t.Error(err)
					return
				}
				ids[g] = append(ids[g], info.ID)
			}
		}()
	}
	wg.Wait()
	for g := range producers {
		if len(ids[g]) != each {
			t.Fatalf("producer %d enqueued %d, want %d", g, len(ids[g]), each)
		}
		for i, id := range ids[g] {
			got, err := b.insp.GetTask(ctx, "q", id)
			if err != nil {
				t.Fatalf("GetTask %s: %v", id, err)
			}
			if !bytes.Equal(got.Payload, payload(g, i)) {
				t.Fatalf("task %s (producer %d, call %d) holds a payload of %d bytes opening %q, want its own",
					id, g, i, len(got.Payload), got.Payload[:min(12, len(got.Payload))])
			}
		}
	}
	if n := b.client.prepared("q", 0).tail.Load(); n < 0 {
		t.Fatal("partition 0 never took the short path")
	}
}

// TestEnqueueOneShortPath: in the steady state (the counter counts, the
// guess is the tail with room, no trim due) enqueue_one.lua answers from
// its short path (codes.EnqGuessed) for an unkeyed task in either message form, and
// leaves a keyed one to the general path (its reply names the tail).
func TestEnqueueOneShortPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	k := keys.For(b.cfg.Prefix, "q", 0)
	for range 2 { // the shard and the counter exist: the guess below is the tail
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
		must(t, err)
	}
	run := func(m *wire.Message, full bool) int64 {
		t.Helper()
		reply, err := script.EnqueueOne.Run(ctx, b.rdb, oneKeys(k, k.ShardPrefix()+"0"),
			packLimits(1000, 0), m.AppendEncode(nil, full)).Int64()
		must(t, err)
		return reply
	}
	plain := func() *wire.Message {
		return &wire.Message{ID: wire.NewID(), Type: "t", Payload: []byte("p"), Raw: true, MaxRetry: wire.CompactMaxRetry}
	}
	if r := run(plain(), false); r != codes.EnqGuessed {
		t.Errorf("a compact message: reply %d, want %d (the short path)", r, codes.EnqGuessed)
	}
	if r := run(plain(), true); r != codes.EnqGuessed {
		t.Errorf("an unkeyed message in full: reply %d, want %d (the short path)", r, codes.EnqGuessed)
	}
	keyed := plain()
	keyed.Key = "tenant-1"
	if r := run(keyed, false); r < 0 {
		t.Errorf("a keyed message: reply %d, want the general path's tail*2+hit", r)
	}
}
