package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// The tests of tasks placed in turns at enqueue (lua/engine/include/fair.lua).

// TestFairTurnsKeepKeyOrder: a key with more tasks than its 16 placed
// turns keeps the rest in its list, behind a marker: its tasks start in
// the order they were enqueued, taking turns with another key's, and
// once every task ran no record of the turns is left.
func TestFairTurnsKeepKeyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 40, "a")
	enqueueKeyed(t, b, 5, "b")
	mu := &startLog{}
	b.server(t, Config{Concurrency: 1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.add(string(task.Payload))
		return nil
	}))
	waitFor(t, 20*time.Second, "every task", func() bool { return len(mu.all()) == 45 })
	var as, first []string
	for i, p := range mu.all() {
		if strings.HasPrefix(p, "a") {
			as = append(as, p)
		}
		if i < 10 {
			first = append(first, keyOf(&Task{Payload: []byte(p)}))
		}
	}
	for i, p := range as {
		if p != fmt.Sprint("a", i) {
			t.Fatalf("key a's tasks started in the order %v, want a0 to a39", as)
		}
	}
	if got := strings.Join(first, ""); got != "ababababab" {
		t.Fatalf("the first ten starts were of keys %s, want a and b in turn", got)
	}
	waitQueueEmpty(t, b)
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	waitFor(t, 20*time.Second, "the turns' records to go", func() bool {
		n, err := b.rdb.Exists(ctx, k.T+":fa", k.T+":fe", k.T+":fx", k.T+":fi", k.FairKeys(), k.FairBacklog()).Result()
		return err == nil && n == 0
	})
	checkFair(t, b)
}

// TestFairTurnsWaitingExact: tasks placed in turns are counted exactly
// while part of a turn was taken, with nothing written per start: per
// key, in Keys, and in QueueInfo; and a key's later tasks follow its
// placed ones.
func TestFairTurnsWaitingExact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 5, "a", "b", "c")
	cfg := Config{Config: b.qcfg, Concurrency: 1}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewServer(b.rdb, cfg, HandlerFunc(func(context.Context, *Task) error { return nil }))
	must(t, err)
	// turn 0 is a0 b0 c0, turn 1 a1 b1 c1: four leases end inside turn 1
	jobs, err := s.engine.Lease(ctx, 4)
	must(t, err)
	if len(jobs) != 4 {
		t.Fatalf("leased %d tasks, want 4", len(jobs))
	}
	enqueueKeyed(t, b, 2, "b")
	want := map[string]int64{"a": 3, "b": 6, "c": 4}
	for key, n := range want {
		ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, key)
		must(t, err)
		if ki.Waiting != n {
			t.Fatalf("GetGroup(%s) = %+v, want %d waiting", key, ki, n)
		}
	}
	page, err := b.insp.Groups(ctx, queue.GroupQuery{Queue: queue.DefaultQueue})
	must(t, err)
	got := map[string]int64{}
	for _, k := range page.Groups {
		got[k.Group] = k.Waiting
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Keys = %v, want %v", got, want)
	}
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if qi.Pending != 13 || qi.Active != 4 || qi.ActiveGroups != 3 {
		t.Fatalf("QueueInfo: %d pending, %d active, %d keys; want 13, 4 and 3", qi.Pending, qi.Active, qi.ActiveGroups)
	}
	checkFair(t, b)
	// the rest, in turn order: b's two new tasks after its placed ones
	var order []string
	for len(order) < 13 {
		jobs, err := s.engine.Lease(ctx, 13-len(order))
		must(t, err)
		if len(jobs) == 0 {
			t.Fatalf("a pop leased nothing after %v", order)
		}
		for _, j := range jobs {
			order = append(order, string(j.Payload))
		}
	}
	if got := strings.Join(order, " "); got != "b1 c1 a2 b2 c2 a3 b3 c3 a4 b4 c4 b0 b1" {
		t.Fatalf("the rest started as %s", got)
	}
}

// TestFairTurnsPauseMidRun: a key paused while its tasks are placed in
// turns starts none of them until resumed; they wait in its list, held,
// and start in their order after the resume.
func TestFairTurnsPauseMidRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueKeyed(t, b, 10, "a", "b")
	log := &startLog{}
	paused := make(chan struct{})
	// no lease ahead: a task leased before the pause would start
	b.server(t, Config{Concurrency: 1, Prefetch: -1}, HandlerFunc(func(ctx context.Context, task *Task) error {
		log.add(string(task.Payload))
		if string(task.Payload) == "b1" {
			must(t, b.insp.Pause(ctx, queue.DefaultQueue, "b"))
			close(paused)
		}
		return nil
	}))
	<-paused
	waitFor(t, 20*time.Second, "key a's tasks", func() bool {
		n := 0
		for _, p := range log.all() {
			if strings.HasPrefix(p, "a") {
				n++
			}
		}
		return n == 10
	})
	if got := strings.Join(log.all(), " "); !strings.HasSuffix(got, "a9") || strings.Count(got, "b") != 2 {
		t.Fatalf("with key b paused after b1, the starts were %s", got)
	}
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "b")
	must(t, err)
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if ki.Waiting != 8 || !ki.Paused || qi.Waiting != 8 || qi.Pending != 0 {
		t.Fatalf("paused key b: %+v; queue %d waiting, %d pending; want 8 waiting, held", ki, qi.Waiting, qi.Pending)
	}
	checkFair(t, b)
	must(t, b.insp.Resume(ctx, queue.DefaultQueue, "b"))
	waitFor(t, 20*time.Second, "key b's tasks", func() bool { return len(log.all()) == 20 })
	var bs []string
	for _, p := range log.all() {
		if strings.HasPrefix(p, "b") {
			bs = append(bs, p)
		}
	}
	for i, p := range bs {
		if p != fmt.Sprint("b", i) {
			t.Fatalf("key b's tasks started in the order %v", bs)
		}
	}
	waitQueueEmpty(t, b)
	checkFair(t, b)
}

// TestFairTurnsListAndPurge: the pending listing pages through the tasks
// placed in turns, markers skipped, and then the keys' lists, missing
// none and repeating none; purging the pending tasks takes the placed
// ones too and leaves no record of the turns; the next tasks of a purged
// key are placed afresh.
func TestFairTurnsListAndPurge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.client.EnqueueMany(ctx, []*queue.Task{queue.NewRawTask("t", []byte("none0")), queue.NewRawTask("t", []byte("none1"))})
	must(t, err)
	enqueueKeyed(t, b, 20, "a") // 16 placed, 4 in its list behind a marker
	enqueueKeyed(t, b, 3, "b")
	seen := map[string]int{}
	after := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatalf("still paging after 20 pages of 4: %v", seen)
		}
		p, err := b.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StatePending, Limit: 4, After: after})
		must(t, err)
		for _, ti := range p.Tasks {
			seen[string(ti.Payload)]++
		}
		if len(p.Tasks) < 4 {
			break
		}
		after = p.Next
	}
	if len(seen) != 25 {
		t.Fatalf("listed %d distinct pending tasks, want 25: %v", len(seen), seen)
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("task %s listed %d times", p, n)
		}
	}
	n, err := b.insp.DeleteAllTasks(ctx, queue.DefaultQueue, queue.StatePending)
	must(t, err)
	qi, err := b.insp.QueueInfo(ctx, queue.DefaultQueue)
	must(t, err)
	if n != 25 || qi.Pending != 0 || qi.Waiting != 0 || qi.ActiveGroups != 0 {
		t.Fatalf("purged %d; then %d pending, %d waiting, %d keys; want 25 purged, none left", n, qi.Pending, qi.Waiting, qi.ActiveGroups)
	}
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	left, err := b.rdb.Keys(ctx, k.T+":f[oq]:*").Result()
	must(t, err)
	if n, err := b.rdb.Exists(ctx, k.T+":fi", k.T+":fa", k.T+":fe", k.T+":fx", k.FairKeys(), k.FairBacklog(), k.T+":fl", k.FairRing()).Result(); err != nil || n != 0 || len(left) != 0 {
		t.Fatalf("after the purge, lists %v and %d records are left (%v)", left, n, err)
	}
	enqueueKeyed(t, b, 2, "a")
	ki, err := b.insp.GetGroup(ctx, queue.DefaultQueue, "a")
	must(t, err)
	if ki.Waiting != 2 {
		t.Fatalf("key a after the purge and 2 more tasks: %+v", ki)
	}
	checkFair(t, b)
}
