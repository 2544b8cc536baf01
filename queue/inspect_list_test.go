package queue_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/lua"
	"github.com/shardq/shardq/queue"
)

// states is a queue with tasks in every state, made by a real worker.
type states struct {
	*ibundle
	q                                             string
	dead, retry, active, done, scheduled, pending []string
	all                                           []string // in enqueue order
}

func setupStates(t *testing.T) *states {
	t.Helper()
	b := isetup(t, queue.Config{})
	s := &states{ibundle: b, q: "q"}
	b.worker(t, s.q)
	in := queue.In(s.q)
	s.dead = b.enqueue(t, 5, typeDie, in)
	s.retry = b.enqueue(t, 4, typeRetry, in)
	s.active = b.enqueue(t, 3, typeBlock, in)
	s.done = b.enqueue(t, 2, typeOK, in, queue.Retention(time.Hour))
	s.scheduled = b.enqueue(t, 6, typeOK, in, queue.ProcessIn(time.Hour))
	b.waitCounts(t, s.q, "every state", func(qi *queue.QueueInfo) bool {
		return qi.Dead == 5 && qi.Retry == 4 && qi.Active == 3 && qi.Succeeded == 2 && qi.Scheduled == 6 && qi.Pending == 0
	})
	must(t, b.insp.Pause(b.ctx, s.q))
	s.pending = b.enqueue(t, 7, typeOK, in)
	// a fetcher blocked since before the pause may hold the first for a
	// moment (in its in-flight list) before it gives it back to the head
	b.waitCounts(t, s.q, "pending", func(qi *queue.QueueInfo) bool { return qi.Pending == 7 })
	for _, l := range [][]string{s.dead, s.retry, s.active, s.done, s.scheduled, s.pending} {
		s.all = append(s.all, l...)
	}
	return s
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	s := setupStates(t)

	t.Run("EveryState", func(t *testing.T) {
		for state, want := range map[queue.State][]string{
			queue.StatePending: s.pending, queue.StateActive: s.active, queue.StateScheduled: s.scheduled,
			queue.StateRetry: s.retry, queue.StateDead: s.dead, queue.StateSucceeded: s.done,
		} {
			got := s.listAll(t, queue.TaskQuery{Queue: s.q, State: state, Limit: 2})
			if fmt.Sprint(sorted(ids(got))) != fmt.Sprint(sorted(want)) {
				t.Fatalf("%s: listed %v, want %v", state, ids(got), want)
			}
			for _, ti := range got {
				if ti.State != state || ti.Queue != s.q || ti.Type == "" {
					t.Fatalf("%s: task %+v", state, ti)
				}
			}
		}
	})

	t.Run("Details", func(t *testing.T) {
		dead := s.listAll(t, queue.TaskQuery{Queue: s.q, State: queue.StateDead, Limit: 10})
		if !strings.Contains(dead[0].LastError, "died <b>on purpose</b>") || dead[0].Attempts != 1 || dead[0].FinishedAt.IsZero() || dead[0].Rank == 0 {
			t.Fatalf("dead task %+v", dead[0])
		}
		active := s.listAll(t, queue.TaskQuery{Queue: s.q, State: queue.StateActive, Limit: 10})
		if !strings.HasPrefix(active[0].Worker, "w-TestListTasks") || active[0].StartedAt.IsZero() {
			t.Fatalf("active task %+v", active[0])
		}
		retry := s.listAll(t, queue.TaskQuery{Queue: s.q, State: queue.StateRetry, Limit: 10})
		if time.Until(retry[0].NextProcessAt) < 50*time.Minute || retry[0].LastError == "" {
			t.Fatalf("retry task %+v", retry[0])
		}
	})

	t.Run("PendingIsFIFO", func(t *testing.T) {
		got := s.listAll(t, queue.TaskQuery{Queue: s.q, State: queue.StatePending, Limit: 3})
		if fmt.Sprint(ids(got)) != fmt.Sprint(s.pending) {
			t.Fatalf("pending %v, want %v", ids(got), s.pending)
		}
	})

	t.Run("RecentBothWays", func(t *testing.T) {
		asc := s.listAll(t, queue.TaskQuery{Queue: s.q, Limit: 4})
		if fmt.Sprint(ids(asc)) != fmt.Sprint(s.all) {
			t.Fatalf("recent oldest first %v, want %v", ids(asc), s.all)
		}
		desc := s.listAll(t, queue.TaskQuery{Queue: s.q, Limit: 4, Newest: true})
		want := slices.Clone(s.all)
		slices.Reverse(want)
		if fmt.Sprint(ids(desc)) != fmt.Sprint(want) {
			t.Fatalf("recent newest first %v, want %v", ids(desc), want)
		}
		for j, ti := range desc {
			if ti.Rank != int64(len(s.all)-j) {
				t.Fatalf("rank of entry %d = %d", j, ti.Rank)
			}
		}
	})

	t.Run("LiveTailFromNewer", func(t *testing.T) {
		first, err := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, Limit: 5, Newest: true})
		must(t, err)
		if first.Tasks[0].ID != s.all[len(s.all)-1] || first.Newer == "" {
			t.Fatalf("first page %v, newer %q", ids(first.Tasks), first.Newer)
		}
		more := s.enqueue(t, 3, typeOK, queue.In(s.q))
		tail, err := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, After: first.Newer})
		must(t, err)
		if fmt.Sprint(ids(tail.Tasks)) != fmt.Sprint(more) {
			t.Fatalf("tail %v, want %v", ids(tail.Tasks), more)
		}
		again, err := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, After: tail.Next})
		must(t, err)
		if len(again.Tasks) != 0 || again.Next != tail.Next {
			t.Fatalf("caught-up tail returned %v, next %q", ids(again.Tasks), again.Next)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		p, err := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, State: queue.StateDead, Limit: 2})
		must(t, err)
		for name, c := range map[string]struct {
			q    queue.TaskQuery
			want error
		}{
			"unknown state":     {queue.TaskQuery{Queue: s.q, State: "bogus"}, queue.ErrInvalid},
			"pending newest":    {queue.TaskQuery{Queue: s.q, State: queue.StatePending, Newest: true}, queue.ErrInvalid},
			"limit":             {queue.TaskQuery{Queue: s.q, State: queue.StateDead, Limit: 1000 + 1}, queue.ErrInvalid},
			"bad queue":         {queue.TaskQuery{Queue: "a b", State: queue.StateDead}, queue.ErrInvalid},
			"other state":       {queue.TaskQuery{Queue: s.q, State: queue.StateRetry, After: p.Next}, queue.ErrInvalid},
			"other order":       {queue.TaskQuery{Queue: s.q, State: queue.StateDead, After: p.Next, Newest: true}, queue.ErrInvalid},
			"garbage":           {queue.TaskQuery{Queue: s.q, State: queue.StateDead, After: "!!!"}, queue.ErrInvalid},
			"forged score":      {queue.TaskQuery{Queue: s.q, State: queue.StateDead, After: forge("dead a", "nan,x")}, queue.ErrInvalid},
			"forged position":   {queue.TaskQuery{Queue: s.q, State: queue.StatePending, After: forge("pending a", "1,-2,x")}, queue.ErrInvalid},
			"extra partitions":  {queue.TaskQuery{Queue: s.q, State: queue.StateDead, After: forge("dead a", "1,x", "2,y")}, queue.ErrInvalid},
			"forged no member":  {queue.TaskQuery{Queue: s.q, State: queue.StateDead, After: forge("dead a", "1,")}, queue.ErrInvalid},
			"forged lua string": {queue.TaskQuery{Queue: s.q, State: queue.StatePending, After: forge("pending a", "x,0,y")}, queue.ErrInvalid},
		} {
			if _, err := s.insp.ListTasks(s.ctx, c.q); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", name, err, c.want)
			}
		}
		// the messages say what was wrong in words, not decoded bytes
		for after, want := range map[string]string{
			"garbage":  "not a marker this Inspector made", // valid base64 of binary
			p.Next:     "made for the dead tasks, oldest first; this listing is the retry tasks, oldest first",
			"!!!":      "not base64url",
			forge("x"): "not a marker this Inspector made",
		} {
			_, err := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, State: queue.StateRetry, After: after})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("marker %q: err = %v, want it to say %q", after, err, want)
			}
		}
		// a node's or a workflow's states name no task: refused, named
		for _, st := range []queue.State{queue.StateWaiting, queue.StateEnqueued, queue.StateFailed, queue.StateSkipped, queue.StateCancelled} {
			_, err1 := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, State: st})
			_, err2 := s.insp.ListTasks(s.ctx, queue.TaskQuery{Queue: s.q, State: st, Type: typeOK})
			_, err3 := s.insp.DeleteAllTasks(s.ctx, s.q, st)
			_, err4 := s.insp.RunAllTasks(s.ctx, s.q, st)
			for j, err := range []error{err1, err2, err3, err4} {
				if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("state %q is a workflow node's", st)) {
					t.Errorf("%s, call %d: err = %v, want ErrInvalid naming it", st, j+1, err)
				}
			}
		}
	})
}

// forge builds a marker by hand, as a client tampering with one would.
func forge(head string, parts ...string) string {
	return b64(head + "\x1e" + strings.Join(parts, "\x1e"))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// TestListPendingNeverMisses pages the pending list while producers append
// at the tail and a consumer pops at the head, over shards of ten: every
// task the consumer did not take is seen, none twice.
func TestListPendingNeverMisses(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{ShardSize: 10})
	initial := b.enqueue(t, 300, typeOK, queue.In("q"))
	list := &lua.ShardedList{Base: keys.For(b.cfg.Prefix, "q", 0).Base(), ShardSize: 10}

	var mu sync.Mutex
	all := append([]string(nil), initial...)
	popped := map[string]bool{}
	var producing atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		producing.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer producing.Add(-1)
			for range 20 {
				got := b.enqueue(t, 15, typeOK, queue.In("q"))
				mu.Lock()
				all = append(all, got...)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	stopPop := make(chan struct{})
	popDone := make(chan struct{})
	go func() {
		defer close(popDone)
		for {
			select {
			case <-stopPop:
				return
			default:
			}
			items, err := list.Pop(b.ctx, b.rdb, lua.Left, 1+rand.IntN(6))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, it := range items {
				m, err := wire.DecodeMessage([]byte(it))
				if err != nil {
					t.Error(err)
				} else {
					popped[wire.PublicID(m.ID)] = true
				}
			}
			mu.Unlock()
			time.Sleep(500 * time.Microsecond)
		}
	}()

	seen := map[string]bool{}
	marker := ""
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		finished := producing.Load() == 0
		p, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "q", State: queue.StatePending, After: marker, Limit: 13})
		must(t, err)
		for _, ti := range p.Tasks {
			if seen[ti.ID] {
				t.Fatalf("task %s seen twice", ti.ID)
			}
			seen[ti.ID] = true
		}
		marker = p.Next
		if finished && len(p.Tasks) < 13 {
			break
		}
	}
	close(stopPop)
	<-popDone
	wg.Wait()
	missed := 0
	for _, id := range all {
		if !seen[id] && !popped[id] {
			missed++
		}
	}
	if missed > 0 || len(all) != 300+3*20*15 {
		t.Fatalf("missed %d of %d tasks (seen %d, popped %d)", missed, len(all), len(seen), len(popped))
	}
	if len(popped) < 50 || len(seen) < 50 {
		t.Fatalf("the race was not exercised: seen %d, popped %d", len(seen), len(popped))
	}
}

// TestListSetMarkerLeaves: the marker task of a sorted set leaves it (it
// is run) between pages, among tasks of equal score: the next page starts
// right after where it was.
func TestListSetMarkerLeaves(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{})
	at := time.Now().Add(time.Hour)
	want := b.enqueue(t, 20, typeOK, queue.In("q"), queue.ProcessAt(at))
	sort.Strings(want) // equal scores order by ID
	var got []string
	marker := ""
	for range 20 {
		p, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "q", State: queue.StateScheduled, After: marker, Limit: 3})
		must(t, err)
		if len(p.Tasks) == 0 {
			break
		}
		got = append(got, ids(p.Tasks)...)
		must(t, b.insp.RunTask(b.ctx, "q", p.Tasks[len(p.Tasks)-1].ID))
		marker = p.Next
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}

// TestListPartitions: a queue over three partitions lists every task once,
// merged by time.
func TestListPartitions(t *testing.T) {
	t.Parallel()
	b := isetup(t, queue.Config{Partitions: map[string]int{"pq": 3}})
	pending := b.enqueue(t, 30, typeOK, queue.In("pq"))
	var scheduled []string
	for j := range 12 {
		scheduled = append(scheduled, b.enqueue(t, 1, typeOK, queue.In("pq"), queue.ProcessIn(time.Duration(j+1)*time.Minute))...)
	}
	got := b.listAll(t, queue.TaskQuery{Queue: "pq", State: queue.StatePending, Limit: 4})
	if fmt.Sprint(sorted(ids(got))) != fmt.Sprint(sorted(pending)) {
		t.Fatalf("pending over partitions: %d tasks %v", len(got), ids(got))
	}
	parts := map[int]bool{}
	for _, ti := range got {
		parts[ti.Partition] = true
	}
	if len(parts) != 3 {
		t.Fatalf("tasks came from partitions %v", parts)
	}
	sched := b.listAll(t, queue.TaskQuery{Queue: "pq", State: queue.StateScheduled, Limit: 5})
	if fmt.Sprint(ids(sched)) != fmt.Sprint(scheduled) {
		t.Fatalf("scheduled merged by due time: %v, want %v", ids(sched), scheduled)
	}
	desc := b.listAll(t, queue.TaskQuery{Queue: "pq", Limit: 5, Newest: true})
	if len(desc) != 42 || len(uniq(ids(desc))) != 42 {
		t.Fatalf("recent newest first over partitions: %d tasks, %d distinct", len(desc), len(uniq(ids(desc))))
	}
	first, err := b.insp.ListTasks(b.ctx, queue.TaskQuery{Queue: "pq", Limit: 5, Newest: true})
	must(t, err)
	more := b.enqueue(t, 9, typeOK, queue.In("pq"))
	tail := b.listAll(t, queue.TaskQuery{Queue: "pq", After: first.Newer, Limit: 2})
	if fmt.Sprint(sorted(ids(tail))) != fmt.Sprint(sorted(more)) {
		t.Fatalf("tail over partitions %v, want %v", ids(tail), more)
	}
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}
