package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// startLog records the group of each task as it starts.
type startLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *startLog) add(key string) {
	l.mu.Lock()
	l.keys = append(l.keys, key)
	l.mu.Unlock()
}

func (l *startLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

func (l *startLog) count(key string) int {
	n := 0
	for _, k := range l.all() {
		if k == key {
			n++
		}
	}
	return n
}

// enqueueKeyed enqueues n tasks of each key, all of a key after the
// other's, in one call: the first key's backlog is first in line.
func enqueueKeyed(t *testing.T, b *bundle, n int, ks ...string) {
	t.Helper()
	var tasks []*queue.Task
	for _, k := range ks {
		for i := range n {
			tasks = append(tasks, queue.NewRawTask("t", []byte(fmt.Sprint(k, i)), queue.Group(k)))
		}
	}
	if _, err := b.client.EnqueueMany(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
}

// keyOf is the key a task's payload names ("a3" is key a's).
func keyOf(task *Task) string { return strings.TrimRight(string(task.Payload), "0123456789") }

// TestFairRoundRobin: three keys, each with a backlog enqueued after the
// other's: the tasks start one key after the other, a, b, c, a, b, c,
// not a's backlog first.
func TestFairRoundRobin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	enqueueKeyed(t, b, 6, "a", "b", "c")
	log := &startLog{}
	b.server(t, Config{Concurrency: 1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	waitFor(t, 20*time.Second, "every task", func() bool { return len(log.all()) == 18 })
	if got := strings.Join(log.all(), ""); got != strings.Repeat("abc", 6) {
		t.Fatalf("keys started in the order %s, want abc six times", got)
	}
	checkFair(t, b)
}

// TestFairWeights: with weights 3 and 1 and both keys backlogged, the
// heavier key gets three starts of every four.
func TestFairWeights(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// the weight holds from the heavy key's first task (the queue exists
	// once the light key's tasks are in)
	enqueueKeyed(t, b, 60, "light")
	must(t, b.insp.SetGroupWeight(context.Background(), queue.DefaultQueue, "heavy", 3))
	enqueueKeyed(t, b, 60, "heavy")
	log := &startLog{}
	b.server(t, Config{Concurrency: 2}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	waitFor(t, 20*time.Second, "the heavy key's tasks", func() bool { return log.count("heavy") == 60 })
	// while both had tasks waiting: the first 80 starts
	heavy := 0
	for _, k := range log.all()[:80] {
		if k == "heavy" {
			heavy++
		}
	}
	if share := float64(heavy) / 80; share < 0.70 || share > 0.80 {
		t.Fatalf("the heavy key had %d of the first 80 starts (%.2f), want 0.75 ± 0.05", heavy, share)
	}
	waitFor(t, 20*time.Second, "the light key's tasks", func() bool { return log.count("light") == 60 })
	checkFair(t, b)
}

// TestFairPausedKey: a paused key's tasks do not start while the other
// keys' run; resumed, they run.
func TestFairPausedKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 5, "a", "b", "c")
	must(t, b.insp.Pause(ctx, queue.DefaultQueue, "b"))
	log := &startLog{}
	b.server(t, Config{Concurrency: 2}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	waitFor(t, 20*time.Second, "the tasks of a and c", func() bool { return log.count("a")+log.count("c") == 10 })
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "b")
	must(t, err)
	if n := log.count("b"); n != 0 || !ki.Paused || ki.Waiting != 5 {
		t.Fatalf("paused key b: %d started; GetGroup = %+v; want none started, 5 waiting, paused", n, ki)
	}
	// the paused key's tasks are held, not pending
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Pending != 0 || qi.Waiting != 5 || qi.ActiveGroups != 1 {
		t.Fatalf("QueueInfo with key b paused: %d pending, %d waiting, %d keys; want 0, 5 and 1",
			qi.Pending, qi.Waiting, qi.ActiveGroups)
	}
	checkFair(t, b)
	must(t, b.insp.Resume(ctx, queue.DefaultQueue, "b"))
	waitFor(t, 20*time.Second, "the tasks of b", func() bool { return log.count("b") == 5 })
	if ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "b"); err != nil || ki.Paused || ki.Waiting != 0 {
		t.Fatalf("key b after its tasks ran: %+v, %v", ki, err)
	}
	if qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue); err != nil || qi.Pending != 0 || qi.Waiting != 0 {
		t.Fatalf("QueueInfo after every task ran: %+v, %v", qi, err)
	}
	checkFair(t, b)
}

// TestFairKeyAtLimitHoldsNoSlot: a key at its GroupConcurrency, its running
// task blocked, holds one worker slot, not more: the other keys' tasks
// all run through the other slots, and the key's waiting tasks never
// start while its one runs.
func TestFairKeyAtLimitHoldsNoSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{GroupConcurrency: 1}))
	enqueueKeyed(t, b, 20, "slow")
	enqueueKeyed(t, b, 20, "a", "b")
	release := make(chan struct{})
	log := &startLog{}
	b.server(t, Config{Concurrency: 3}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		if keyOf(task) == "slow" {
			<-release
		}
		return nil
	}))
	waitFor(t, 20*time.Second, "the tasks of a and b", func() bool { return log.count("a")+log.count("b") == 40 })
	if n := log.count("slow"); n != 1 {
		t.Fatalf("%d tasks of the key at its limit started, want 1", n)
	}
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "slow")
	must(t, err)
	if ki.Running != 1 || ki.Waiting != 19 {
		t.Fatalf("GetGroup(slow) = %+v, want 1 running, 19 waiting", ki)
	}
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	li, err := b.insp.LimitInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Pending != 0 || qi.Waiting != 19 || li.Waiting != 19 {
		t.Fatalf("the key at its limit: %d pending, %d waiting (LimitInfo %d); want 0 and 19 held",
			qi.Pending, qi.Waiting, li.Waiting)
	}
	checkFair(t, b)
	close(release)
	waitFor(t, 20*time.Second, "the slow key's tasks", func() bool { return log.count("slow") == 20 })
	waitQueueEmpty(t, b)
	checkFair(t, b)
}

// TestFairRunningWithoutLimit: with no GroupConcurrency a lease counts no
// key (so a keyed task costs what a plain one does), yet GetGroup and Keys
// still say how many of a key's tasks run, counted from the leases.
func TestFairRunningWithoutLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 4, "a", "b")
	release := make(chan struct{})
	log := &startLog{}
	// no prefetch: a task leased ahead counts as running, as in
	// QueueInfo.Active, and the starts would not say how many run
	b.server(t, Config{Concurrency: 3, Prefetch: -1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		<-release
		return nil
	}))
	waitFor(t, 20*time.Second, "three starts", func() bool { return len(log.all()) == 3 })
	want := map[string]int64{}
	for _, k := range log.all() {
		want[k]++
	}
	for _, k := range []string{"a", "b"} {
		ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, k)
		must(t, err)
		if ki.Running != want[k] || ki.Waiting != 4-want[k] {
			t.Fatalf("GetGroup(%s) = %+v, want %d running, %d waiting", k, ki, want[k], 4-want[k])
		}
	}
	page, err := b.insp.Groups(ctx, queue.GroupQuery{Queue: queue.DefaultQueue})
	must(t, err)
	for _, ki := range page.Groups {
		if ki.Running != want[ki.Group] {
			t.Fatalf("Keys: %+v, want %d running", ki, want[ki.Group])
		}
	}
	if len(page.Groups) != 2 {
		t.Fatalf("Keys: %+v, want a and b", page.Groups)
	}
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	if n, err := b.rdb.Exists(ctx, k.KeyActive()).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s = %d, %v: a lease with no GroupConcurrency counted its key", k.KeyActive(), n, err)
	}
	close(release)
	waitFor(t, 20*time.Second, "every task", func() bool { return len(log.all()) == 8 })
	waitQueueEmpty(t, b)
	checkFair(t, b)
}

// TestFairRunningCountBounded: with no GroupConcurrency, GetGroup counts a
// key's running tasks among the partition's first 10,000 leases, so a
// call reads a bounded number of messages however many tasks run.
func TestFairRunningCountBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const leased = 10_050
	tasks := make([]*queue.Task, leased)
	for i := range tasks {
		tasks[i] = queue.NewRawTask("t", nil, queue.Group("a"))
	}
	if _, err := b.client.EnqueueMany(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Config: b.qcfg, Concurrency: 1}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(b.rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	must(t, err)
	// lease every task, none acked: the worker never starts
	for got := 0; got < leased; {
		jobs, err := s.engine.Lease(ctx, min(1000, leased-got))
		must(t, err)
		if len(jobs) == 0 {
			t.Fatalf("a pop leased nothing after %d of %d", got, leased)
		}
		got += len(jobs)
	}
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "a")
	must(t, err)
	if qi.Active != leased || ki.Running != 10_000 || ki.Waiting != 0 {
		t.Fatalf("%d leased; GetGroup(a) = %+v, want 10,000 running counted and none waiting", qi.Active, ki)
	}
}

// TestFairLimitSetWhileRunning: a GroupConcurrency set while a key's tasks
// run without one holds the key's starts to the limit from then on: the
// tasks already running are not counted, so at most the limit more start
// while they run, and none start past it.
func TestFairLimitSetWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 10, "a")
	before, after := make(chan struct{}), make(chan struct{})
	log := &startLog{}
	// no prefetch: a task leased ahead before the limit is not counted
	// either, and would start past it once a slot frees
	b.server(t, Config{Concurrency: 6, Prefetch: -1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		if len(log.all()) <= 6 {
			<-before
		} else {
			<-after
		}
		return nil
	}))
	waitFor(t, 20*time.Second, "six starts", func() bool { return len(log.all()) == 6 })
	must(t, b.insp.SetLimits(ctx, queue.DefaultQueue, queue.Limits{GroupConcurrency: 2}))
	close(before)
	// the six end and their acks land; two more start under the limit
	// and hold it, and the other two are held for the key
	waitFor(t, 20*time.Second, "two starts under the limit", func() bool {
		ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "a")
		must(t, err)
		qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		must(t, err)
		return ki.Running == 2 && ki.Waiting == 2 && qi.Active == 2 && qi.Waiting == 2
	})
	if n := len(log.all()); n != 8 {
		t.Fatalf("under GroupConcurrency 2: %d tasks started, want 8", n)
	}
	close(after)
	waitFor(t, 20*time.Second, "every task", func() bool { return len(log.all()) == 10 })
	waitQueueEmpty(t, b)
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	if n, err := b.rdb.Exists(ctx, k.KeyActive()).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s = %d, %v after every task ended: a count was left behind", k.KeyActive(), n, err)
	}
	checkFair(t, b)
}

// TestFairIsolation: a key enqueued behind another key's long backlog
// starts at its first turn, not after the backlog.
func TestFairIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	enqueueKeyed(t, b, 2000, "busy")
	enqueueKeyed(t, b, 3, "quiet")
	log := &startLog{}
	b.server(t, Config{Concurrency: 4}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	waitFor(t, 20*time.Second, "the quiet key's tasks", func() bool { return log.count("quiet") == 3 })
	// turns alternate: the quiet key's three start within the first few
	// starts, not after 2,000
	busy := 0
	for _, k := range log.all() {
		if k == "quiet" {
			break
		}
		busy++
	}
	if busy > 8 {
		t.Fatalf("the quiet key's first task started after %d of the busy key's", busy)
	}
	waitFor(t, 20*time.Second, "every task", func() bool { return len(log.all()) == 2003 })
	checkFair(t, b)
}

// TestFairUnkeyedTakeTurns: tasks with no key take turns with the keys,
// as one more key: neither starves the other.
func TestFairUnkeyedTakeTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var plain []*queue.Task
	for i := range 30 {
		plain = append(plain, queue.NewRawTask("t", []byte(fmt.Sprint("none", i))))
	}
	_, err := b.client.EnqueueMany(ctx, plain)
	must(t, err)
	enqueueKeyed(t, b, 30, "a")
	log := &startLog{}
	b.server(t, Config{Concurrency: 1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	waitFor(t, 20*time.Second, "every task", func() bool { return len(log.all()) == 60 })
	first := log.all()[:20]
	if n := strings.Count(strings.Join(first, ","), "none"); n < 8 || n > 12 {
		t.Fatalf("of the first 20 starts %d had no key (%v): want them to alternate with key a", n, first)
	}
	checkFair(t, b)
}

// TestFairPausedKeysAhead: a worker with one free slot reaches a key that
// may start behind more paused keys than one pop reads (1,000): each pop
// reads on past the keys that leave the ring, and a pop that ran out of
// keys to read says to look again at once, so the live key's tasks start
// without a blocked slice per paused key.
func TestFairPausedKeysAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var stopped []string
	for i := range 1100 {
		stopped = append(stopped, fmt.Sprint("stopped", i, "-"))
	}
	enqueueKeyed(t, b, 1, stopped...)
	for _, k := range stopped {
		must(t, b.insp.Pause(ctx, queue.DefaultQueue, k))
	}
	enqueueKeyed(t, b, 3, "live")
	log := &startLog{}
	b.server(t, Config{Concurrency: 1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(keyOf(task))
		return nil
	}))
	// a blocked slice per pop that found only paused keys would take
	// minutes: the deadline fails it
	waitFor(t, 20*time.Second, "the live key's tasks", func() bool { return log.count("live") == 3 })
	if n := len(log.all()); n != 3 {
		t.Fatalf("%d tasks started, want the live key's 3 only", n)
	}
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "stopped7-")
	must(t, err)
	if !ki.Paused || ki.Waiting != 1 {
		t.Fatalf("GetGroup(stopped7-) = %+v, want paused with 1 waiting", ki)
	}
	checkFair(t, b)
}

// waitQueueEmpty waits until the default queue has nothing pending, held
// or leased: every task ran and its ack landed.
func waitQueueEmpty(t *testing.T, b *bundle) {
	t.Helper()
	waitFor(t, 20*time.Second, "an empty queue", func() bool {
		qi, err := b.insp.QueueInfo(context.Background(), queue.DefaultQueue)
		must(t, err)
		return qi.Pending == 0 && qi.Waiting == 0 && qi.Active == 0
	})
}

// checkFair checks the bookkeeping of fair queues (lua/engine/include/fair.lua)
// in partition 0 of the default queue, read in one MULTI so no script
// runs between the reads: the counters agree with the keys' lists, every
// key in the ring is there once, in state r, and every key in state r is
// there; a key without tasks has no trace but an operator's settings.
func checkFair(t *testing.T, b *bundle) {
	t.Helper()
	checkFairPartition(t, b.rdb, keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0))
}

// checkFairPartition is checkFair on partition k.
func checkFairPartition(t *testing.T, rdb redis.UniversalClient, k keys.Partition) {
	t.Helper()
	ctx := context.Background()
	var recs *redis.MapStringStringCmd
	var backlog *redis.ZSliceCmd
	var names, ring *redis.StringSliceCmd
	var counts *redis.SliceCmd
	var plain *redis.IntCmd
	var placed *redis.MapStringStringCmd
	var turn *redis.StringCmd
	lens := map[string]*redis.IntCmd{}
	// the shards of each key: read first, then everything in one MULTI
	fk, err := rdb.HGetAll(ctx, k.FairKeys()).Result()
	must(t, err)
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		recs = p.HGetAll(ctx, k.FairKeys())
		backlog = p.ZRangeWithScores(ctx, k.FairBacklog(), 0, -1)
		names = p.ZRange(ctx, k.T+":fl", 0, -1)
		ring = p.LRange(ctx, k.FairRing(), 0, -1)
		counts = p.MGet(ctx, k.FairCount(), k.FairHeld())
		plain = p.Exists(ctx, k.T+":fs")
		placed = p.HGetAll(ctx, k.T+":fa")
		turn = p.Get(ctx, k.T+":fi")
		for key, rec := range fk {
			var first, last int
			var state string
			if _, err := fmt.Sscanf(rec, "%d %d %s", &first, &last, &state); err != nil {
				t.Fatalf("record of key %q: %q: %v", key, rec, err)
			}
			for n := first; n <= last; n++ {
				lens[fmt.Sprint(key, ":", n)] = p.LLen(ctx, fmt.Sprint(k.T, ":fq:", key, ":", n))
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil { // no turn now: T:fi is absent
		t.Fatal(err)
	}
	if fmt.Sprint(recs.Val()) != fmt.Sprint(fk) {
		t.Fatalf("the keys changed while checked: is a worker still busy?")
	}
	num := func(v any) int64 {
		s, _ := v.(string)
		var n int64
		fmt.Sscan(s, &n)
		return n
	}
	fn, fh := num(counts.Val()[0]), num(counts.Val()[1])
	waiting := map[string]int64{}
	var held int64
	for _, z := range backlog.Val() {
		waiting[z.Member.(string)] = int64(z.Score)
	}
	// the tasks placed in turns and not taken yet, per key (include/fair.lua)
	var cur, popped, pass int64
	if v := turn.Val(); v != "" {
		if _, err := fmt.Sscanf(v, "%d %d %d", &cur, &popped, &pass); err != nil {
			t.Fatalf("turn %q: %v", v, err)
		}
	}
	keyset := map[string]bool{}
	for key := range fk {
		keyset[key] = true
	}
	var placedSum int64
	for key, rec := range placed.Val() {
		keyset[key] = true
		fields := strings.Fields(rec)
		if len(fields) < 4 {
			t.Fatalf("placed record of key %q: %q", key, rec)
		}
		for _, f := range fields[4:] {
			var r, pos int64
			if _, err := fmt.Sscanf(f, "%d:%d", &r, &pos); err != nil {
				t.Fatalf("placed record of key %q: %q: %v", key, rec, err)
			}
			if r > cur || (r == cur && pos > popped) {
				placedSum++
			}
		}
	}
	if len(waiting) != len(keyset) || len(names.Val()) != len(keyset) {
		t.Fatalf("%d keys with lists or placed tasks, %d with backlogs, %d by name", len(keyset), len(waiting), len(names.Val()))
	}
	inRing := map[string]int{}
	for _, key := range ring.Val() {
		inRing[key]++
	}
	for key, rec := range fk {
		var first, last int
		var state string
		fmt.Sscanf(rec, "%d %d %s", &first, &last, &state)
		var stored int64
		for n := first; n <= last; n++ {
			stored += lens[fmt.Sprint(key, ":", n)].Val()
		}
		if stored != waiting[key] || stored == 0 {
			t.Fatalf("key %q: %d tasks in its lists, %d counted", key, stored, waiting[key])
		}
		if state == "b" || state == "p" || state == "w" {
			held += stored
		}
		if want := map[bool]int{true: 1, false: 0}[state == "r"]; inRing[key] != want {
			t.Fatalf("key %q in state %s is in the ring %d times", key, state, inRing[key])
		}
	}
	if plain.Val() == 1 && inRing[""] != 1 {
		t.Fatalf(`the flag says "" is in the ring; it is there %d times`, inRing[""])
	}
	for key, n := range inRing {
		if key == "" && (n != 1 || plain.Val() != 1) {
			t.Fatalf(`"" is in the ring %d times, flag %d`, n, plain.Val())
		}
		if _, ok := fk[key]; key != "" && !ok {
			t.Fatalf("key %q is in the ring without tasks", key)
		}
	}
	var listed int64
	for key := range fk {
		listed += waiting[key]
	}
	if fn != listed+placedSum || fh != held {
		t.Fatalf("counted %d waiting and %d held; the lists hold %d and %d, the turns %d", fn, fh, listed, held, placedSum)
	}
}
