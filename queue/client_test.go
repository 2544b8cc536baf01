package queue

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

type email struct {
	To      string
	Subject string
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})

	t.Run("PendingTaskRoundTrips", func(t *testing.T) {
		task, err := NewTask("email:send", email{To: "a@example.com", Subject: "hi"})
		must(t, err)
		info, err := b.client.Enqueue(ctx, task, In("mail"), MaxRetry(3), Timeout(time.Minute))
		must(t, err)
		if info.State != StatePending || info.Queue != "mail" || info.Type != "email:send" || len(info.ID) != 36 {
			t.Fatalf("info = %+v", info)
		}
		got, err := b.insp.GetTask(ctx, "mail", info.ID)
		must(t, err)
		var e email
		must(t, got.Decode(&e))
		if e.To != "a@example.com" || got.State != StatePending || got.MaxRetry != 3 || got.Timeout != time.Minute {
			t.Fatalf("GetTask = %+v, payload %+v", got, e)
		}
		var v any
		must(t, got.Decode(&v))
		if m, ok := v.(map[string]any); !ok || m["Subject"] != "hi" {
			t.Fatalf("Decode into any = %#v", v)
		}
	})

	t.Run("RawPayload", func(t *testing.T) {
		info, err := b.client.Enqueue(ctx, NewRawTask("raw", []byte(`{"json":true}`)))
		must(t, err)
		got, err := b.insp.GetTask(ctx, DefaultQueue, info.ID)
		must(t, err)
		if !got.Raw || string(got.Payload) != `{"json":true}` {
			t.Fatalf("raw task = %+v", got)
		}
		// a raw payload decodes as JSON (what non-Go producers send)
		var v struct{ JSON bool }
		if err := got.Decode(&v); err != nil || !v.JSON {
			t.Fatalf("Decode of a raw JSON payload: %+v, %v", v, err)
		}
		info, err = b.client.Enqueue(ctx, NewRawTask("raw", []byte("plain text")))
		must(t, err)
		got, err = b.insp.GetTask(ctx, DefaultQueue, info.ID)
		must(t, err)
		if err := got.Decode(&v); err == nil || !strings.Contains(err.Error(), "raw payload, read as JSON") {
			t.Fatalf("Decode of raw text: err = %v", err)
		}
	})

	t.Run("DefaultsApply", func(t *testing.T) {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil))
		must(t, err)
		if info.Queue != DefaultQueue || info.MaxRetry != config.DefaultMaxRetry {
			t.Fatalf("defaults: queue %q, max retry %d", info.Queue, info.MaxRetry)
		}
	})

	t.Run("CallOptionsOverrideTaskOptions", func(t *testing.T) {
		task := NewRawTask("t", nil, In("a"), MaxRetry(1))
		info, err := b.client.Enqueue(ctx, task, In("b"))
		must(t, err)
		if info.Queue != "b" || info.MaxRetry != 1 {
			t.Fatalf("queue %q max retry %d; want b and 1", info.Queue, info.MaxRetry)
		}
	})

	t.Run("ProcessInSchedules", func(t *testing.T) {
		before := time.Now()
		info, err := b.client.Enqueue(ctx, NewRawTask("later", []byte("x")), In("sched"), ProcessIn(time.Hour))
		must(t, err)
		if info.State != StateScheduled {
			t.Fatalf("state %s, want scheduled", info.State)
		}
		got, err := b.insp.GetTask(ctx, "sched", info.ID)
		must(t, err)
		if got.State != StateScheduled || got.NextProcessAt.Before(before.Add(59*time.Minute)) || got.NextProcessAt.After(time.Now().Add(61*time.Minute)) {
			t.Fatalf("scheduled task = state %s due %v", got.State, got.NextProcessAt)
		}
		// The returned info says when, as GetTask does (to the clocks' skew).
		if d := info.NextProcessAt.Sub(got.NextProcessAt).Abs(); d > time.Second {
			t.Fatalf("Enqueue's info says due %v, GetTask %v", info.NextProcessAt, got.NextProcessAt)
		}
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		info, err = b.client.Enqueue(ctx, NewRawTask("later", []byte("x")), In("sched"), ProcessAt(at))
		must(t, err)
		if info.State != StateScheduled || !info.NextProcessAt.Equal(at) {
			t.Fatalf("ProcessAt(%v): state %s due %v", at, info.State, info.NextProcessAt)
		}
		qi, err := b.insp.QueueInfo(ctx, "sched")
		must(t, err)
		if qi.Scheduled != 2 || qi.Pending != 0 {
			t.Fatalf("QueueInfo = %+v", qi)
		}
	})

	t.Run("ProcessAtPastIsPending", func(t *testing.T) {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("past"), ProcessAt(time.Now().Add(-time.Hour)))
		must(t, err)
		if info.State != StatePending {
			t.Fatalf("state %s, want pending", info.State)
		}
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		info, err = b.client.Enqueue(ctx, NewRawTask("t", nil), In("past"), ProcessAt(at), Deadline(at.Add(time.Hour)), Retention(time.Minute))
		must(t, err)
		got, err := b.insp.GetTask(ctx, "past", info.ID)
		must(t, err)
		if !got.NextProcessAt.Equal(at) || !got.Deadline.Equal(at.Add(time.Hour)) || got.Retention != time.Minute {
			t.Fatalf("got due %v deadline %v retention %v", got.NextProcessAt, got.Deadline, got.Retention)
		}
	})

	t.Run("TaskIDAndDuplicate", func(t *testing.T) {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("ids"), TaskID("order-42"))
		must(t, err)
		if info.ID != "order-42" {
			t.Fatalf("ID %q", info.ID)
		}
		_, err = b.client.Enqueue(ctx, NewRawTask("t", []byte("other")), In("ids"), TaskID("order-42"))
		if !errors.Is(err, ErrDuplicateTaskID) || !strings.Contains(err.Error(), "order-42") {
			t.Fatalf("second enqueue: err = %v, want ErrDuplicateTaskID naming the ID", err)
		}
		qi, _ := b.insp.QueueInfo(ctx, "ids")
		if qi.Pending != 1 {
			t.Fatalf("pending %d after a duplicate, want 1 (the duplicate must leave no trace)", qi.Pending)
		}
		got, _ := b.insp.GetTask(ctx, "ids", "order-42")
		if len(got.Payload) != 0 {
			t.Fatal("the duplicate overwrote the first task")
		}
	})

	t.Run("UniqueAndDuplicate", func(t *testing.T) {
		task := NewRawTask("report", []byte("2026-11"))
		_, err := b.client.Enqueue(ctx, task, In("uniq"), Unique(time.Hour))
		must(t, err)
		_, err = b.client.Enqueue(ctx, task, In("uniq"), Unique(time.Hour))
		if !errors.Is(err, ErrDuplicateUniqueTask) {
			t.Fatalf("err = %v, want ErrDuplicateUniqueTask", err)
		}
		// another payload is another task
		_, err = b.client.Enqueue(ctx, NewRawTask("report", []byte("2026-12")), In("uniq"), Unique(time.Hour))
		must(t, err)
		// a caller key makes different payloads collide
		_, err = b.client.Enqueue(ctx, NewRawTask("report", []byte("a")), In("uniq"), UniqueBy("tenant-1", time.Hour))
		must(t, err)
		_, err = b.client.Enqueue(ctx, NewRawTask("report", []byte("b")), In("uniq"), UniqueBy("tenant-1", time.Hour))
		if !errors.Is(err, ErrDuplicateUniqueTask) {
			t.Fatalf("err = %v, want ErrDuplicateUniqueTask", err)
		}
	})

	t.Run("UniqueLockExpires", func(t *testing.T) {
		task := NewRawTask("ping", nil)
		_, err := b.client.Enqueue(ctx, task, In("uexp"), Unique(50*time.Millisecond))
		must(t, err)
		time.Sleep(120 * time.Millisecond)
		if _, err := b.client.Enqueue(ctx, task, In("uexp"), Unique(50*time.Millisecond)); err != nil {
			t.Fatalf("enqueue after the lock expired: %v", err)
		}
	})
}

func TestEnqueueRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{MaxPayloadSize: 100})
	cases := []struct {
		name string
		task *Task
		opts []Option
		want error
		text string
	}{
		{"EmptyQueueName", NewRawTask("t", nil), []Option{In("")}, ErrInvalid, `""`},
		{"BraceInQueueName", NewRawTask("t", nil), []Option{In("a{b}")}, ErrInvalid, `a{b}`},
		{"SpaceInQueueName", NewRawTask("t", nil), []Option{In("a b")}, ErrInvalid, `a b`},
		{"ControlInQueueName", NewRawTask("t", nil), []Option{In("a\x00")}, ErrInvalid, `control`},
		{"LongQueueName", NewRawTask("t", nil), []Option{In(strings.Repeat("q", 129))}, ErrInvalid, `129 bytes`},
		{"PayloadTooLarge", NewRawTask("big", make([]byte, 101)), nil, errPayloadTooLarge, `101 bytes, limit 100`},
		{"EmptyType", NewRawTask("", nil), nil, ErrInvalid, `type ""`},
		{"NilTask", nil, nil, ErrInvalid, `nil task`},
		{"BadTaskID", NewRawTask("t", nil), []Option{TaskID("a b")}, ErrInvalid, `"a b"`},
		{"NegativeMaxRetry", NewRawTask("t", nil), []Option{MaxRetry(-1)}, ErrInvalid, `MaxRetry(-1)`},
		{"ZeroUniqueTTL", NewRawTask("t", nil), []Option{Unique(0)}, ErrInvalid, `Unique(0s)`},
		{"ZeroTimeout", NewRawTask("t", nil), []Option{Timeout(0)}, ErrInvalid, `Timeout(0s)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.client.Enqueue(ctx, c.task, c.opts...)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.want, c.text)
			}
		})
	}
	if n := b.rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("rejected tasks wrote %d keys", n)
	}
	if _, err := NewTask("t", make(chan int)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewTask with an unencodable payload: err = %v", err)
	}
	// NewTask, which returns an error, catches a bad type or option where
	// the task is made rather than at Enqueue.
	for _, c := range []struct {
		typ  string
		opts []Option
		want error
	}{
		{"", nil, ErrInvalid},
		{"a b", nil, ErrInvalid},
		{"t", []Option{MaxRetry(-1)}, ErrInvalid},
		{"t", []Option{In("a{b}")}, ErrInvalid},
		{"t", []Option{TaskID("a b")}, ErrInvalid},
	} {
		if task, err := NewTask(c.typ, 1, c.opts...); !errors.Is(err, c.want) || task != nil {
			t.Fatalf("NewTask(%q, %d options): task %v, err %v; want %v", c.typ, len(c.opts), task, err, c.want)
		}
	}
	for _, cfg := range []Config{{ShardSize: -1}, {ShardSize: 100_000}, {FeedSize: -1}, {FeedSize: 2_000_000_000}, {Prefix: "a{b"}, {Partitions: map[string]int{"q": 0}}, {Partitions: map[string]int{"a b": 1}}, {WorkflowRetention: -time.Hour}} {
		if _, err := NewClient(b.rdb, cfg); !errors.Is(err, ErrInvalid) {
			t.Fatalf("NewClient(%+v): err = %v, want ErrInvalid", cfg, err)
		}
	}
	var unset *redis.Client
	for _, rdb := range []redis.UniversalClient{nil, unset} {
		if _, err := NewClient(rdb, Config{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "nil Redis client") {
			t.Fatalf("NewClient(%#v): err = %v, want ErrInvalid", rdb, err)
		}
		if _, err := NewInspector(rdb, Config{}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("NewInspector(%#v): err = %v, want ErrInvalid", rdb, err)
		}
	}
}

func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// The yardstick: 10,000 tasks in batches of 500 cost 20 script
	// calls and 20 round trips (the registry write rides in the first).
	t.Run("OneScriptCallPerBatch", func(t *testing.T) {
		b := setup(t, Config{})
		b.warm(t)
		for i := 0; i < 10_000; i += 500 {
			tasks := make([]*Task, 500)
			for j := range tasks {
				tasks[j] = NewRawTask("bulk", []byte(fmt.Sprint(i+j)), In("bulk"))
			}
			infos, err := b.client.EnqueueMany(ctx, tasks)
			must(t, err)
			if len(infos) != 500 || infos[499] == nil {
				t.Fatalf("batch %d: %d infos", i, len(infos))
			}
		}
		if n := b.hook.scripts.Load(); n != 20 {
			t.Fatalf("%d script calls for 20 batches, want 20", n)
		}
		if n := b.hook.roundTrips.Load(); n != 20 {
			t.Fatalf("%d round trips for 20 batches, want 20", n)
		}
		qi, err := b.insp.QueueInfo(ctx, "bulk")
		must(t, err)
		if qi.Pending != 10_000 {
			t.Fatalf("pending %d, want 10000", qi.Pending)
		}
	})

	// Plain batches take the script's short layout, mixed ones the long one;
	// either way every task keeps its own message, pending or scheduled.
	t.Run("EachTaskKeepsItsMessage", func(t *testing.T) {
		b := setup(t, Config{})
		for _, mixed := range []bool{false, true} {
			tasks := make([]*Task, 1200) // over one 500-pair HSET chunk
			for j := range tasks {
				tasks[j] = NewRawTask("t", []byte(fmt.Sprintf("%v-%d", mixed, j)))
				if mixed && j%3 == 1 {
					tasks[j] = NewRawTask("t", []byte(fmt.Sprintf("%v-%d", mixed, j)), ProcessIn(time.Hour))
				}
				if mixed && j%3 == 2 {
					tasks[j] = NewRawTask("t", []byte(fmt.Sprintf("%v-%d", mixed, j)), Unique(time.Hour))
				}
			}
			infos, err := b.client.EnqueueMany(ctx, tasks, In("keep"))
			must(t, err)
			for j, info := range infos {
				ti, err := b.insp.GetTask(ctx, "keep", info.ID)
				must(t, err)
				if want := fmt.Sprintf("%v-%d", mixed, j); string(ti.Payload) != want {
					t.Fatalf("task %d (%s): payload %q, want %q", j, ti.State, ti.Payload, want)
				}
			}
		}
	})

	t.Run("PartialRejection", func(t *testing.T) {
		b := setup(t, Config{MaxPayloadSize: 10})
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), TaskID("taken"))
		must(t, err)
		tasks := []*Task{
			NewRawTask("t", []byte("ok1")),
			NewRawTask("t", nil, TaskID("taken")),
			NewRawTask("t", make([]byte, 11)),
			NewRawTask("t", nil, TaskID("fresh")),
			NewRawTask("t", nil, TaskID("fresh")), // duplicate within the batch
			NewRawTask("t", []byte("ok2")),
		}
		infos, err := b.client.EnqueueMany(ctx, tasks)
		var be *EnqueueError
		if !errors.As(err, &be) || len(be.Errs) != len(tasks) {
			t.Fatalf("err = %v, want *EnqueueError with one entry per task", err)
		}
		want := []error{nil, ErrDuplicateTaskID, errPayloadTooLarge, nil, ErrDuplicateTaskID, nil}
		for i, w := range want {
			if w == nil && (be.Errs[i] != nil || infos[i] == nil) {
				t.Errorf("task %d: err %v info %v, want enqueued", i, be.Errs[i], infos[i])
			}
			if w != nil && !errors.Is(be.Errs[i], w) {
				t.Errorf("task %d: err %v, want %v", i, be.Errs[i], w)
			}
			// a duplicate's info is the task that holds the ID
			if w == ErrDuplicateTaskID && (infos[i] == nil || infos[i].ID != []string{1: "taken", 4: "fresh"}[i] || infos[i].State != StatePending) {
				t.Errorf("task %d: info %+v, want the pending task that holds its ID", i, infos[i])
			}
			if w == errPayloadTooLarge && infos[i] != nil {
				t.Errorf("task %d: info %+v for a task refused", i, infos[i])
			}
		}
		if !errors.Is(err, ErrDuplicateTaskID) || !errors.Is(err, errPayloadTooLarge) {
			t.Fatal("errors.Is does not see through EnqueueError")
		}
		qi, _ := b.insp.QueueInfo(ctx, DefaultQueue)
		if qi.Pending != 4 { // taken + ok1 + fresh + ok2
			t.Fatalf("pending %d, want 4", qi.Pending)
		}
	})

	t.Run("PartitionsOneCallEach", func(t *testing.T) {
		b := setup(t, Config{Partitions: map[string]int{"wide": 4}})
		b.warm(t)
		tasks := make([]*Task, 100)
		for i := range tasks {
			tasks[i] = NewRawTask("t", nil, In("wide"))
		}
		// the first call to a queue of several partitions reads its
		// layout first (TestFirstCallReadsTheLayout): one round trip more
		_, err := b.client.EnqueueMany(ctx, tasks[:50])
		must(t, err)
		if s, r := b.hook.scripts.Load(), b.hook.roundTrips.Load(); s != 4 || r != 2 {
			t.Fatalf("first call: %d script calls in %d round trips, want 4 in 2", s, r)
		}
		b.hook.scripts.Store(0)
		b.hook.roundTrips.Store(0)
		_, err = b.client.EnqueueMany(ctx, tasks[50:])
		must(t, err)
		if s, r := b.hook.scripts.Load(), b.hook.roundTrips.Load(); s != 4 || r != 1 {
			t.Fatalf("%d script calls in %d round trips, want 4 in 1", s, r)
		}
		qi, err := b.insp.QueueInfo(ctx, "wide")
		must(t, err)
		if qi.Partitions != 4 || qi.Pending != 100 {
			t.Fatalf("QueueInfo = %+v", qi)
		}
		for p := range 4 {
			k := keys.For(b.cfg.Prefix, "wide", p)
			if n := b.rdb.LLen(ctx, k.ShardPrefix()+"0").Val(); n != 25 {
				t.Fatalf("partition %d holds %d tasks, want 25 (round-robin)", p, n)
			}
		}
	})
}

// TestPendingTaskHasNoKeyOfItsOwn: the number of keys grows with the shard
// count, not the task count; a pending task is one list element.
func TestPendingTaskHasNoKeyOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{ShardSize: 1000, FeedSize: 10})
	tasks := make([]*Task, 5000)
	for i := range tasks {
		tasks[i] = NewRawTask("t", []byte("payload"))
	}
	infos, err := b.client.EnqueueMany(ctx, tasks)
	must(t, err)
	// registry, first (never moved), last, 5 shards, feed, feed rank, the
	// feed's shard index, and the prefix's protocol version
	if n := b.rdb.DBSize(ctx).Val(); n > 11 {
		keys, _ := b.rdb.Keys(ctx, "*").Result()
		t.Fatalf("%d keys for 5000 pending tasks: %v", n, keys)
	}
	k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
	if n := b.rdb.HLen(ctx, k.FeedMsg()).Val(); n != 0 {
		t.Fatalf("the feed holds %d message copies: a plain task's message is only in its shard", n)
	}
	// the feed's tasks are found in their shards, through the index, which
	// keeps only what the feed's lowest rank needs
	for _, info := range infos[len(infos)-10:] {
		got, err := b.insp.GetTask(ctx, DefaultQueue, info.ID)
		if err != nil || string(got.Payload) != "payload" || got.State != StatePending {
			t.Fatalf("GetTask(%s) = %+v, %v", info.ID, got, err)
		}
	}
	// shard 4 (where the feed's lowest rank is) and shard 5 (the next push)
	if got := b.rdb.ZRange(ctx, k.FeedShards(), 0, -1).Val(); strings.Join(got, ",") != "4,5" {
		t.Fatalf("the shard index holds shards %v, want 4 and 5", got)
	}
	if n := b.rdb.HLen(ctx, k.Msg()).Val(); n != 0 {
		t.Fatalf("%d pending tasks have a record", n)
	}
}

func TestEnqueueWhenRedisMisbehaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("DownReturnsCause", func(t *testing.T) {
		b := setup(t, Config{})
		// the port held: a cluster node another test started took it once,
		// and the call met CLUSTERDOWN there
		b.srv.KillHoldingPort(t)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := b.client.Enqueue(cctx, NewRawTask("t", nil), In("q"))
		if err == nil || !isNetErr(err) || !strings.Contains(err.Error(), `enqueue "q"`) {
			t.Fatalf("err = %v, want a network error naming the queue", err)
		}
		// the context's 2s, with room for a loaded machine: a call that
		// waited for the client's own 30s read timeout would be far past it
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("returned after %v, past the context", d)
		}
	})

	t.Run("HungReturnsWithinContext", func(t *testing.T) {
		b := setup(t, Config{})
		must(t, b.rdb.Ping(ctx).Err())
		b.srv.Pause(t)
		defer b.srv.Resume(t)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := b.client.Enqueue(cctx, NewRawTask("t", nil))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		// about the context's 300ms; the client alone would wait its 30s read timeout
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("returned after %v, want about 300ms", d)
		}
		for _, f := range []func() error{
			func() error { _, err := b.insp.QueueInfo(cctx, DefaultQueue); return err },
			func() error { _, err := b.insp.GetTask(cctx, DefaultQueue, "x"); return err },
			func() error { _, err := b.insp.Queues(cctx); return err },
			func() error {
				_, err := b.insp.ListTasks(cctx, TaskQuery{Queue: DefaultQueue})
				return err
			},
		} {
			if err := f(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("inspector on a hung Redis: err = %v", err)
			}
		}
	})

	t.Run("OutOfMemory", func(t *testing.T) {
		b := setup(t, Config{}, redistest.WithMaxMemory(3<<20))
		big := make([]byte, 64<<10)
		_, _ = crand.Read(big) // incompressible: stored at its size
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			_, err = b.client.Enqueue(ctx, NewRawTask("big", big))
		}
		if !errors.Is(err, ErrRedisOutOfMemory) {
			t.Fatalf("err = %v, want ErrRedisOutOfMemory", err)
		}
	})

	t.Run("RestartFlushesScriptCache", func(t *testing.T) {
		b := setup(t, Config{}, redistest.WithAOF())
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil))
		must(t, err)
		b.srv.Kill(t)
		b.srv.Restart(t)
		var info *TaskInfo
		for range 50 { // the pool's old connections fail once each
			if info, err = b.client.Enqueue(ctx, NewRawTask("t", nil)); err == nil {
				break
			}
		}
		must(t, err)
		if _, err := b.insp.GetTask(ctx, DefaultQueue, info.ID); err != nil {
			t.Fatal(err)
		}
		qi, _ := b.insp.QueueInfo(ctx, DefaultQueue)
		if qi.Pending != 2 {
			t.Fatalf("pending %d after restart with AOF, want 2", qi.Pending)
		}
	})
}

func TestEnqueueOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	cfg := Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"hot": 6}}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	var tasks []*Task
	for i := range 300 {
		tasks = append(tasks, NewRawTask("t", []byte(fmt.Sprint(i)), In([]string{"hot", "a", "b"}[i%3])))
	}
	infos, err := client.EnqueueMany(ctx, tasks)
	must(t, err)
	_, err = client.Enqueue(ctx, NewRawTask("t", nil), In("a"), TaskID("x"), Unique(time.Hour), ProcessIn(time.Hour))
	must(t, err)
	_, err = client.Enqueue(ctx, NewRawTask("t", nil), In("a"), TaskID("x"))
	if !errors.Is(err, ErrDuplicateTaskID) {
		t.Fatalf("duplicate on cluster: %v", err)
	}
	for _, q := range []string{"hot", "a", "b"} {
		qi, err := insp.QueueInfo(ctx, q)
		must(t, err)
		if qi.Pending != 100 {
			t.Fatalf("%s: pending %d, want 100", q, qi.Pending)
		}
	}
	got, err := insp.GetTask(ctx, "hot", infos[0].ID)
	must(t, err)
	if string(got.Payload) != "0" {
		t.Fatalf("GetTask on cluster = %+v", got)
	}
	qs, err := insp.Queues(ctx)
	must(t, err)
	if fmt.Sprint(qs) != "[a b hot]" {
		t.Fatalf("Queues = %v", qs)
	}
}

// TestPendingFoundInItsShard: plain tasks leave no message copy, yet
// GetTask, the recent feed and DeleteTask find each pending one in its
// shard, across many shard rolls, single and batch enqueues, and tasks of
// the checked path (which keep their copy) in between; a deleted one is no
// longer found, and one that left pending is read from T:msg.
func TestPendingFoundInItsShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{ShardSize: 3, FeedSize: 100})
	var ids []string
	payloads := map[string]string{}
	add := func(info *TaskInfo, p string) {
		ids = append(ids, info.ID)
		payloads[info.ID] = p
	}
	for i := range 20 {
		p := fmt.Sprint("single-", i)
		info, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(p)))
		must(t, err)
		add(info, p)
		if i == 10 {
			// the checked path: a chosen ID, its own copy in T:feed:msg
			info, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("chosen")), TaskID("chosen-1"))
			must(t, err)
			add(info, "chosen")
		}
	}
	// a group: the task may be parked away from the shards, so
	// it keeps its copy
	keyed, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("keyed")), Group("tenant-1"))
	must(t, err)
	add(keyed, "keyed")
	k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
	// copies: the chosen ID's, the keyed task's, and a plain task's only when
	// it was pushed into an empty shard (a blocked worker's move could take
	// it out of every shard until its claim): at most one per shard
	shards := len(b.rdb.Keys(ctx, k.T+":s:*").Val())
	if n := len(b.rdb.HKeys(ctx, k.FeedMsg()).Val()); n < 2 || n > 2+shards {
		t.Fatalf("T:feed:msg holds %d copies, want 2 and at most one per shard (%d shards)", n, shards)
	}
	batch := make([]*Task, 7)
	for i := range batch {
		batch[i] = NewRawTask("t", []byte(fmt.Sprint("batch-", i)))
	}
	infos, err := b.client.EnqueueMany(ctx, batch)
	must(t, err)
	for i, info := range infos {
		add(info, fmt.Sprint("batch-", i))
	}
	for _, id := range ids {
		got, err := b.insp.GetTask(ctx, DefaultQueue, id)
		if err != nil || string(got.Payload) != payloads[id] || got.State != StatePending {
			t.Fatalf("GetTask(%s) = %+v, %v; want pending %q", id, got, err, payloads[id])
		}
	}
	page, err := b.insp.ListTasks(ctx, TaskQuery{Queue: DefaultQueue, Limit: 100})
	must(t, err)
	if len(page.Tasks) != len(ids) {
		t.Fatalf("the recent feed holds %d tasks, want %d", len(page.Tasks), len(ids))
	}
	for i, ti := range page.Tasks {
		if ti.ID != ids[i] || string(ti.Payload) != payloads[ti.ID] {
			t.Fatalf("feed entry %d: %s %q, want %s %q", i, ti.ID, ti.Payload, ids[i], payloads[ids[i]])
		}
	}

	// deleted by ID: the task still sits in its shard until a dequeue
	// drops it, but no reader finds it
	must(t, b.insp.DeleteTask(ctx, DefaultQueue, ids[5]))
	if _, err := b.insp.GetTask(ctx, DefaultQueue, ids[5]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTask of a deleted pending task: err = %v, want ErrNotFound", err)
	}
	if err := b.insp.DeleteTask(ctx, DefaultQueue, ids[5]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting it twice: err = %v, want ErrNotFound", err)
	}
	page, err = b.insp.ListTasks(ctx, TaskQuery{Queue: DefaultQueue, Limit: 100})
	must(t, err)
	for _, ti := range page.Tasks {
		if ti.ID == ids[5] && ti.Payload != nil {
			t.Fatalf("the feed still shows the deleted task's message %q", ti.Payload)
		}
	}
}

// TestCheckedPendingFoundInItsShard: tasks of the checked path (chosen
// IDs, unique) pending now keep no message copy: readers find them in
// their shards, over several shards, as plain tasks; a scheduled task and
// a keyed one keep theirs. Deleting one by ID releases its unique lock.
func TestCheckedPendingFoundInItsShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{ShardSize: 3, FeedSize: 100})
	var tasks []*Task
	for i := range 20 {
		opts := []Option{TaskID(fmt.Sprint("chosen-", i))}
		if i == 7 {
			opts = append(opts, Unique(time.Hour))
		}
		tasks = append(tasks, NewRawTask("t", []byte(fmt.Sprint("p-", i)), opts...))
	}
	tasks = append(tasks, NewRawTask("t", []byte("later"), TaskID("later"), ProcessIn(time.Hour)),
		NewRawTask("t", []byte("keyed"), TaskID("keyed"), Group("tenant-1")))
	_, err := b.client.EnqueueMany(ctx, tasks)
	must(t, err)
	k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
	shards := len(b.rdb.Keys(ctx, k.T+":s:*").Val())
	if n := len(b.rdb.HKeys(ctx, k.FeedMsg()).Val()); n < 2 || n > 2+shards || shards < 6 {
		t.Fatalf("T:feed:msg holds %d copies over %d shards: want the scheduled and keyed tasks', and at most one per shard", n, shards)
	}
	for i := range 20 {
		got, err := b.insp.GetTask(ctx, DefaultQueue, fmt.Sprint("chosen-", i))
		if err != nil || string(got.Payload) != fmt.Sprint("p-", i) || got.State != StatePending {
			t.Fatalf("GetTask(chosen-%d) = %+v, %v", i, got, err)
		}
	}
	for id, state := range map[string]State{"later": StateScheduled, "keyed": StatePending} {
		if got, err := b.insp.GetTask(ctx, DefaultQueue, id); err != nil || string(got.Payload) != id || got.State != state {
			t.Fatalf("GetTask(%s) = %+v, %v", id, got, err)
		}
	}
	// the unique task deleted by ID: its lock goes with it
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("p-7"), Unique(time.Hour))); !errors.Is(err, ErrDuplicateUniqueTask) {
		t.Fatalf("a duplicate of the unique task: %v, want ErrDuplicateUniqueTask", err)
	}
	must(t, b.insp.DeleteTask(ctx, DefaultQueue, "chosen-7"))
	if _, err := b.insp.GetTask(ctx, DefaultQueue, "chosen-7"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTask of the deleted task: %v", err)
	}
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("p-7"), Unique(time.Hour))); err != nil {
		t.Fatalf("a unique task after the deletion: %v", err)
	}
}

// TestPendingFoundWhileMovedToInFlight: a task pushed into an empty shard
// may be moved out of every shard by a blocked worker's BLMOVE until its
// claim; it keeps its copy, so GetTask finds it meanwhile.
func TestPendingFoundWhileMovedToInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	info, err := b.client.Enqueue(ctx, NewRawTask("t", []byte("moving")))
	must(t, err)
	k := keys.For(b.cfg.Prefix, DefaultQueue, 0)
	// what the blocking pop does: the head item into the worker's in-flight list
	must(t, b.rdb.LMove(ctx, k.T+":s:0", k.T+":inflight:w1", "LEFT", "RIGHT").Err())
	got, err := b.insp.GetTask(ctx, DefaultQueue, info.ID)
	if err != nil || string(got.Payload) != "moving" {
		t.Fatalf("GetTask while in flight = %+v, %v", got, err)
	}
}

// TestEnqueueSpreadsOverPartitions: single Enqueue calls spread a queue's
// tasks evenly over its partitions, round-robin, whichever path a call
// takes: the plain one, or the general one (a queue with a MaxDepth, a
// scheduled task), which once took a second round-robin turn per call and,
// with two partitions, put every task into the same one.
func TestEnqueueSpreadsOverPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limits *Limits
		opts   []Option
		state  State
	}{
		{"Plain", nil, nil, StatePending},
		{"MaxDepth", &Limits{MaxDepth: 1 << 20}, nil, StatePending},
		{"Scheduled", nil, []Option{ProcessIn(time.Hour)}, StateScheduled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Partitions: map[string]int{"spread": 2}})
			if tc.limits != nil {
				must(t, b.insp.SetLimits(ctx, "spread", *tc.limits))
			}
			per := map[int]int{}
			for i := range 100 {
				info, err := b.client.Enqueue(ctx, NewRawTask("spread", []byte(fmt.Sprint(i)), In("spread")), tc.opts...)
				must(t, err)
				if info.State != tc.state {
					t.Fatalf("task %d: state %s, want %s", i, info.State, tc.state)
				}
				per[info.Partition]++
			}
			if per[0] != 50 || per[1] != 50 {
				t.Fatalf("100 tasks over 2 partitions: %v, want 50 each", per)
			}
		})
	}
}
