package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
)

// waiting is a queue's depth as MaxDepth counts it, from one counts call
// per partition.
func waiting(t *testing.T, insp *Inspector, q string) int64 {
	t.Helper()
	qi, err := insp.QueueInfo(context.Background(), q)
	must(t, err)
	return qi.Pending + qi.Scheduled + qi.Retry
}

func TestMaxDepth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("EnqueueOverItIsQueueFull", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{ShardSize: 4}) // several shards: the O(1) count spans them
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 10}))
		for i := range 10 {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", []byte(fmt.Sprint(i))), In("q"))
			must(t, err)
		}
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
		if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), `"q" has MaxDepth 10`) {
			t.Fatalf("11th enqueue: %v, want ErrQueueFull naming the queue and its MaxDepth", err)
		}
		// a scheduled task counts too, and is refused as well
		_, err = b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"), ProcessIn(time.Hour))
		if !errors.Is(err, ErrQueueFull) {
			t.Fatalf("scheduled enqueue into a full queue: %v, want ErrQueueFull", err)
		}
		if n := waiting(t, b.insp, "q"); n != 10 {
			t.Fatalf("depth = %d, want 10", n)
		}
		// deleting one pending task (a tombstone) makes room for one
		page, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "q", State: StatePending, Limit: 1})
		must(t, err)
		must(t, b.insp.DeleteTask(ctx, "q", page.Tasks[0].ID))
		_, err = b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"), ProcessIn(time.Hour))
		must(t, err)
		_, err = b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
		if !errors.Is(err, ErrQueueFull) {
			t.Fatalf("enqueue after the room was taken: %v, want ErrQueueFull", err)
		}
	})

	t.Run("BatchReportsItPerTask", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 5}))
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"), TaskID("taken"))
		must(t, err)
		var tasks []*Task
		for i := range 8 {
			tasks = append(tasks, NewRawTask("t", []byte(fmt.Sprint(i)), In("q")))
		}
		tasks[1] = NewRawTask("t", nil, In("q"), TaskID("taken")) // a duplicate, with room
		infos, err := b.client.EnqueueMany(ctx, tasks)
		var be *EnqueueError
		if !errors.As(err, &be) {
			t.Fatalf("batch over MaxDepth: %v, want a *EnqueueError", err)
		}
		if !errors.Is(be.Errs[1], ErrDuplicateTaskID) {
			t.Fatalf("task 1: %v, want ErrDuplicateTaskID", be.Errs[1])
		}
		// 1 already there, room for 4 more in order (the duplicate took its
		// place in the count): tasks 0, 2, 3 in, 4..7 refused
		for i, e := range be.Errs {
			switch {
			case i == 1:
			case i < 4 && (e != nil || infos[i] == nil):
				t.Fatalf("task %d: %v, want enqueued", i, e)
			case i >= 4 && (!errors.Is(e, ErrQueueFull) || infos[i] != nil):
				t.Fatalf("task %d: %v, want ErrQueueFull", i, e)
			}
		}
		if n := waiting(t, b.insp, "q"); n != 4 {
			t.Fatalf("depth = %d, want 4", n)
		}
	})

	t.Run("NeverExceededBy16Producers", func(t *testing.T) {
		t.Parallel()
		for _, parts := range []int{1, 3} {
			b := setup(t, Config{ShardSize: 16, Partitions: map[string]int{"q": parts}})
			const max = 200
			must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: max}))
			var ok, full atomic.Int64
			var wg sync.WaitGroup
			for p := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 40 { // 16 x 40 x (1 or 3) tasks: far more than fit
						var tasks []*Task
						for j := range 1 + i%3 {
							tasks = append(tasks, NewRawTask("t", []byte(fmt.Sprint(p, i, j)), In("q")))
						}
						_, err := b.client.EnqueueMany(ctx, tasks)
						var be *EnqueueError
						if err != nil && !errors.As(err, &be) {
							t.Error(err)
							return
						}
						for j := range tasks {
							if be != nil && be.Errs[j] != nil {
								if !errors.Is(be.Errs[j], ErrQueueFull) {
									t.Error(be.Errs[j])
								}
								full.Add(1)
							} else {
								ok.Add(1)
							}
						}
					}
				}()
			}
			wg.Wait()
			if ok.Load() != max || full.Load() == 0 {
				t.Fatalf("%d partitions: %d enqueued, %d refused; want exactly %d enqueued", parts, ok.Load(), full.Load(), max)
			}
			if n := waiting(t, b.insp, "q"); n != max {
				t.Fatalf("%d partitions: depth %d, want %d", parts, n, max)
			}
		}
	})

	t.Run("WaitForRoomEndsWithTheContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 1}))
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
		must(t, err)
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		info, err := b.client.Enqueue(wctx, NewRawTask("t", nil), In("q"), WaitForRoom())
		// ErrQueueFull too, unless the deadline cut a try short
		if info != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting on a full queue past the deadline: %v, %v; want DeadlineExceeded", info, err)
		}
		if n := waiting(t, b.insp, "q"); n != 1 {
			t.Fatalf("depth = %d, want 1", n)
		}
	})

	t.Run("WaitForRoomTakesRoomWhenMade", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 2}))
		_, err := b.client.EnqueueMany(ctx, []*Task{NewRawTask("t", nil, In("q")), NewRawTask("t", nil, In("q"))})
		must(t, err)
		go func() {
			time.Sleep(200 * time.Millisecond)
			_, err := b.insp.DeleteAllTasks(ctx, "q", StatePending)
			if err != nil {
				t.Error(err)
			}
		}()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second) // room comes after 200ms
		defer cancel()
		tasks := []*Task{NewRawTask("t", []byte("a"), In("q")), NewRawTask("t", []byte("b"), In("q")), NewRawTask("t", []byte("c"), In("q"))}
		infos, err := b.client.EnqueueMany(wctx, tasks, WaitForRoom())
		var be *EnqueueError
		if !errors.As(err, &be) || be.Errs[0] != nil || be.Errs[1] != nil || infos[0] == nil || infos[1] == nil {
			t.Fatalf("batch waiting for room: %v, want the first two enqueued once room was made", err)
		}
		// the third never finds room: it ends with the context (asleep
		// between tries: still full; during one: its outcome unknown)
		if !errors.Is(be.Errs[2], context.DeadlineExceeded) {
			t.Fatalf("third task: %v, want the deadline", be.Errs[2])
		}
	})

	t.Run("NoMaxDepthUsesThePlainScript", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		h := &shaHook{}
		b.rdb.AddHook(h)
		for range 20 {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("free"))
			must(t, err)
		}
		// the first call learns the queue has no MaxDepth; the others, within
		// the cache's second, run the plain script
		capped, plain := h.count(script.EnqueueCapped.Hash()), h.count(script.EnqueueOne.Hash())
		if capped < 1 || plain < 1 || capped+plain != 20 || (capped > 2 && plain < 15) {
			t.Fatalf("capped %d, plain %d of 20 enqueues; want 1 capped then plain", capped, plain)
		}
	})

	t.Run("NewMaxDepthReachesProducersWithinASecond", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q")) // caches: no MaxDepth
		must(t, err)
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 1}))
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
			if errors.Is(err, ErrQueueFull) {
				break
			}
			must(t, err)
			if time.Now().After(deadline) {
				t.Fatal("MaxDepth set 20s ago is not applied")
			}
			time.Sleep(50 * time.Millisecond)
		}
		// and removing it lets producers in again
		must(t, b.insp.SetLimits(ctx, "q", Limits{}))
		_, err = b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
		must(t, err)
	})

	t.Run("BadValueRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		err := b.insp.SetLimits(ctx, "q", Limits{MaxDepth: -1})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "MaxDepth:-1") {
			t.Fatalf("SetLimits(MaxDepth -1): %v, want ErrInvalid naming it", err)
		}
	})

	t.Run("LimitInfoShowsIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 7, GroupRate: 3}))
		for _, o := range []Option{In("q"), ProcessIn(time.Hour)} {
			_, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("q"), o)
			must(t, err)
		}
		li, err := b.insp.LimitInfo(ctx, "q")
		must(t, err)
		if li.Limits.MaxDepth != 7 || li.Limits.GroupRate != 3 || li.Limits.Per != time.Second || li.Depth != 2 {
			t.Fatalf("LimitInfo = %+v, want MaxDepth 7, GroupRate 3 per second, depth 2", li)
		}
	})
}

// shaHook counts EVALSHA calls by script SHA.
type shaHook struct {
	mu   sync.Mutex
	shas map[string]int
}

func (h *shaHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *shaHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *shaHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.note(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *shaHook) note(cmd redis.Cmder) {
	if strings.ToLower(cmd.Name()) != "evalsha" || len(cmd.Args()) < 2 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shas == nil {
		h.shas = map[string]int{}
	}
	h.shas[fmt.Sprint(cmd.Args()[1])]++
}

func (h *shaHook) count(sha string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shas[sha]
}

// TestMaxDepthOnCluster: a queue of 6 partitions over 3 masters holds its
// MaxDepth exactly, each partition its share, with every key of a call in
// one slot.
func TestMaxDepthOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	cfg := Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"hot": 6}, ShardSize: 8}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)
	must(t, insp.SetLimits(ctx, "hot", Limits{MaxDepth: 100}))
	var tasks []*Task
	for i := range 150 {
		tasks = append(tasks, NewRawTask("t", []byte(fmt.Sprint(i)), In("hot")))
	}
	infos, err := client.EnqueueMany(ctx, tasks)
	var be *EnqueueError
	if !errors.As(err, &be) {
		t.Fatalf("150 tasks into MaxDepth 100: %v, want a *EnqueueError", err)
	}
	n := 0
	for i, info := range infos {
		switch {
		case info != nil:
			n++
		case !errors.Is(be.Errs[i], ErrQueueFull):
			t.Fatalf("task %d: %v", i, be.Errs[i])
		}
	}
	qi, err := insp.QueueInfo(ctx, "hot")
	must(t, err)
	if n != 100 || qi.Pending != 100 {
		t.Fatalf("%d enqueued, %d pending; want 100 of MaxDepth 100", n, qi.Pending)
	}
}

func TestKeyMaxDepth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyed := func(key string, opts ...Option) *Task {
		return NewRawTask("t", nil, append([]Option{In("q"), Group(key)}, opts...)...)
	}

	t.Run("KeyOverItIsRefusedOthersGetIn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{GroupMaxDepth: 2}))
		_, err := b.client.EnqueueMany(ctx, []*Task{keyed("a"), keyed("a", ProcessIn(time.Hour))})
		must(t, err)
		_, err = b.client.Enqueue(ctx, keyed("a"))
		if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), `key "a" of "q" has GroupMaxDepth 2`) {
			t.Fatalf("third task of key a: %v, want ErrQueueFull naming the key", err)
		}
		infos, err := b.client.EnqueueMany(ctx, []*Task{keyed("a"), keyed("b"), NewRawTask("t", nil, In("q")), keyed("b"), keyed("b")})
		var be *EnqueueError
		if !errors.As(err, &be) || !errors.Is(be.Errs[0], ErrQueueFull) || !errors.Is(be.Errs[4], ErrQueueFull) ||
			infos[1] == nil || infos[2] == nil || infos[3] == nil {
			t.Fatalf("mixed batch: %v", err)
		}
		// deleting a's scheduled task, and purging the pending ones, counts
		// them out
		_, err = b.insp.DeleteAllTasks(ctx, "q", StateScheduled)
		must(t, err)
		_, err = b.client.Enqueue(ctx, keyed("a"))
		must(t, err)
		_, err = b.insp.DeleteAllTasks(ctx, "q", StatePending)
		must(t, err)
		_, err = b.client.EnqueueMany(ctx, []*Task{keyed("a"), keyed("a"), keyed("b"), keyed("b")})
		must(t, err)
	})

	t.Run("NeverExceededBy16Producers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{GroupMaxDepth: 50}))
		var ok, full atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					_, err := b.client.Enqueue(ctx, keyed("hot"))
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, ErrQueueFull):
						full.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 50 || full.Load() != 110 {
			t.Fatalf("%d enqueued, %d refused; want 50 and 110", ok.Load(), full.Load())
		}
	})

	t.Run("CountsGoWithTheLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		must(t, b.insp.SetLimits(ctx, "q", Limits{GroupMaxDepth: 1}))
		_, err := b.client.Enqueue(ctx, keyed("a"))
		must(t, err)
		must(t, b.insp.SetLimits(ctx, "q", Limits{}))
		if n := b.rdb.Exists(ctx, keys.For(b.cfg.Prefix, "q", 0).KeyDepth()).Val(); n != 0 {
			t.Fatal("the per-key depths outlive GroupMaxDepth")
		}
		// set again: what was enqueued before is not counted
		must(t, b.insp.SetLimits(ctx, "q", Limits{GroupMaxDepth: 1}))
		deadline := time.Now().Add(20 * time.Second)
		for {
			// the client may still believe there is no limit for a second:
			// a plain enqueue is not counted, so wait for the first refusal
			_, err := b.client.Enqueue(ctx, keyed("a"))
			if errors.Is(err, ErrQueueFull) {
				break
			}
			must(t, err)
			if time.Now().After(deadline) {
				t.Fatal("GroupMaxDepth not applied")
			}
		}
		qi, err := b.insp.QueueInfo(ctx, "q")
		must(t, err)
		if qi.Pending < 2 {
			t.Fatalf("pending %d: the task from before the limit was counted", qi.Pending)
		}
	})

	t.Run("BadValueRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		if err := b.insp.SetLimits(ctx, "q", Limits{GroupMaxDepth: -1}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("GroupMaxDepth -1: %v, want ErrInvalid", err)
		}
	})
}

// TestMaxDepthSharedOverTheLayout: a queue an operator spread over 4
// partitions holds its MaxDepth over all 4, each partition its share, for
// a producer configured with one: each partition allowed the whole
// MaxDepth, as the producer passed its Config's count, not the layout's
// (found writing docs/protocol.md).
func TestMaxDepthSharedOverTheLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	must(t, b.insp.SetPartitions(ctx, "q", 4))
	must(t, b.insp.SetLimits(ctx, "q", Limits{MaxDepth: 40}))
	c, err := NewClient(b.rdb, b.cfg)
	must(t, err)
	accepted := 0
	for range 100 {
		_, err := c.Enqueue(ctx, NewRawTask("t", nil, In("q")))
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, ErrQueueFull):
			t.Fatal(err)
		}
	}
	qi, err := b.insp.QueueInfo(ctx, "q")
	must(t, err)
	if accepted > 40 || qi.Pending != int64(accepted) || qi.Partitions != 4 {
		t.Fatalf("%d accepted, %d pending over %d partitions; want at most the MaxDepth, 40", accepted, qi.Pending, qi.Partitions)
	}
}
