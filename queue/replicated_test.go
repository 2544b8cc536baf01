package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
)

// TestWaitReplicas: with Config.WaitReplicas an enqueue returns once the
// partition's replica has the write. WAIT runs on the connection and node
// that ran the script: with the replica of one partition's master frozen,
// enqueues to that partition fail with ErrNotReplicated (and are still
// enqueued), while the other partitions' succeed; a WAIT sent to any other
// node or connection would have been answered at once.
func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	cfg := Config{Prefix: redistest.Prefix(t), Partitions: map[string]int{"q": 3},
		WaitReplicas: 1, WaitTimeout: 300 * time.Millisecond}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	insp, err := NewInspector(rdb, cfg)
	must(t, err)

	t.Run("Replicated", func(t *testing.T) {
		// a patient client: on a loaded machine a replica can take more
		// than 300ms to confirm, which is not what this part shows
		patient := cfg
		patient.WaitTimeout = 10 * time.Second
		slow := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, ReadTimeout: 20 * time.Second})
		t.Cleanup(func() { _ = slow.Close() })
		client, err := NewClient(slow, patient)
		must(t, err)
		for i := range 9 {
			if _, err := client.Enqueue(ctx, NewRawTask("t", nil), In("q")); err != nil {
				t.Fatalf("enqueue %d: %v", i, err)
			}
		}
	})

	t.Run("ReplicaFrozen", func(t *testing.T) {
		master := cl.MasterOf(t, cl.Slot(t, keys.For(cfg.Prefix, "q", 0).T))
		frozen := map[int]bool{} // the partitions master serves
		for i := range 3 {
			frozen[i] = cl.MasterOf(t, cl.Slot(t, keys.For(cfg.Prefix, "q", i).T)) == master
		}
		replica := cl.ReplicaOf(t, master)
		replica.Pause(t)
		defer replica.Resume(t)
		before, err := insp.QueueInfo(ctx, "q")
		must(t, err)
		failed := 0
		for i := range 6 {
			info, err := client.Enqueue(ctx, NewRawTask("t", nil), In("q"))
			switch {
			case err == nil:
				if frozen[info.Partition] {
					t.Errorf("enqueue %d to partition %d succeeded with its replica frozen", i, info.Partition)
				}
			case errors.Is(err, ErrNotReplicated):
				failed++
				if info == nil || !frozen[info.Partition] {
					t.Errorf("enqueue %d: ErrNotReplicated with info %+v, want a partition of %s (%v)", i, info, master.Addr, frozen)
				}
			default:
				t.Fatalf("enqueue %d: %v", i, err)
			}
		}
		want := 0
		for _, f := range frozen {
			if f {
				want += 2 // 6 enqueues, round robin over 3 partitions
			}
		}
		if failed != want {
			t.Errorf("%d enqueues not replicated, want %d (partitions on %s: %v)", failed, want, master.Addr, frozen)
		}
		after, err := insp.QueueInfo(ctx, "q")
		must(t, err)
		if after.Pending != before.Pending+6 {
			t.Errorf("pending %d -> %d, want +6: a write WAIT did not confirm is still a write", before.Pending, after.Pending)
		}
	})

	t.Run("MoreThanThereAre", func(t *testing.T) {
		c2, err := NewClient(rdb, Config{Prefix: cfg.Prefix, WaitReplicas: 2, WaitTimeout: 50 * time.Millisecond})
		must(t, err)
		infos, err := c2.EnqueueMany(ctx, []*Task{NewRawTask("t", nil), NewRawTask("t", nil)}, In("solo"))
		var be *EnqueueError
		if !errors.As(err, &be) || !errors.Is(err, ErrNotReplicated) || infos[0] == nil || infos[1] == nil {
			t.Fatalf("EnqueueMany wanting 2 replicas of 1: %v, infos %v", err, infos)
		}
		// the one replica may not have confirmed within 50ms on a busy
		// machine: the count is 0 or 1, never 2
		want := fmt.Sprintf(" of 2 replicas within %v", 50*time.Millisecond)
		if msg := be.Errs[0].Error(); !strings.Contains(msg, "1"+want) && !strings.Contains(msg, "0"+want) {
			t.Errorf("error %q does not say 0 or 1%s", be.Errs[0], want)
		}
	})
}

// TestWaitReplicasSingleNode: on one server (no replica) WaitReplicas 1
// reports ErrNotReplicated and the task is enqueued; bad settings are
// ErrInvalid.
func TestWaitReplicasSingleNode(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond})
	info, err := b.client.Enqueue(context.Background(), NewRawTask("t", nil))
	if !errors.Is(err, ErrNotReplicated) || info == nil {
		t.Fatalf("Enqueue = %v, %v; want its info and ErrNotReplicated", info, err)
	}
	qi, err := b.insp.QueueInfo(context.Background(), "default")
	must(t, err)
	if qi.Pending != 1 {
		t.Errorf("pending = %d, want 1", qi.Pending)
	}
	// a WAIT of 5s would outlast the client's 3s read
	for _, c := range []Config{{WaitReplicas: -1}, {WaitReplicas: 1, WaitTimeout: -time.Second}, {WaitReplicas: 1, WaitTimeout: 5 * time.Second}} {
		if _, err := NewClient(b.rdb, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewClient(%+v) = %v, want ErrInvalid", c, err)
		}
	}
}

// BenchmarkEnqueueWaitReplicas measures what Config.WaitReplicas costs: 16
// producers enqueueing one task per call to a 3-partition queue on a
// cluster of 3 masters with a replica each, without and with WAIT 1.
func BenchmarkEnqueueWaitReplicas(b *testing.B) {
	cl := redistest.StartClusterWithReplicas(b, 3)
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, PoolSize: 32})
			defer rdb.Close()
			client, err := NewClient(rdb, Config{Prefix: redistest.Prefix(b), Partitions: map[string]int{"q": 3}, WaitReplicas: n})
			must(b, err)
			ctx := context.Background()
			payload := make([]byte, 100)
			if _, err := client.Enqueue(ctx, NewRawTask("warm", payload), In("q")); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			const producers = 16
			var wg sync.WaitGroup
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := p; i < b.N; i += producers {
						if _, err := client.Enqueue(ctx, NewRawTask("bench", payload), In("q")); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// waitHook records the timeout of every WAIT a client sends.
type waitHook struct {
	mu    sync.Mutex
	waits []int64 // ms
}

func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}
func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *waitHook) record(cmd redis.Cmder) {
	if !strings.EqualFold(cmd.Name(), "wait") {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ms, _ := cmd.Args()[2].(int64)
	h.waits = append(h.waits, ms)
}

// take returns the WAIT timeouts recorded since the last take, and their sum.
func (h *waitHook) take() ([]int64, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.waits
	h.waits = nil
	var sum int64
	for _, ms := range w {
		sum += ms
	}
	return w, sum
}

// TestWaitReplicasAfterScriptFlush: a call under WaitReplicas waits for
// replicas at most WaitTimeout in all, even when the script cache is
// empty, as a promoted replica's is: the script's NOSCRIPT round trip
// still runs its WAIT, so the WAIT sent with the script again gets only
// what is left of the timeout. One server with no replica: every WAIT
// runs to its timeout. Before, each call sent two WAITs of the whole
// timeout and took twice as long.
func TestWaitReplicasAfterScriptFlush(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	b := setup(t, Config{WaitReplicas: 1, WaitTimeout: timeout})
	hook := &waitHook{}
	b.rdb.AddHook(hook)
	ctx := context.Background()
	for i := range 3 { // the first call also registers the queue
		must(t, b.rdb.ScriptFlush(ctx).Err())
		start := time.Now()
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil))
		took := time.Since(start)
		if !errors.Is(err, ErrNotReplicated) || info == nil {
			t.Fatalf("call %d: Enqueue = %v, %v; want its info and ErrNotReplicated", i, info, err)
		}
		waits, sum := hook.take()
		if len(waits) < 2 {
			t.Fatalf("call %d sent WAITs %v: the flushed cache did not make it send the script twice", i, waits)
		}
		// each WAIT gets what is left, at least 1ms
		if sum > timeout.Milliseconds()+int64(len(waits)) {
			t.Errorf("call %d sent WAITs of %v ms, %d ms in all; want at most the WaitTimeout, %v", i, waits, sum, timeout)
		}
		// the wall clock says the same, with room for a loaded machine
		if took > timeout*3/2 {
			t.Errorf("call %d took %v; want under 1.5 x WaitTimeout (%v)", i, took, timeout)
		}
	}
	qi, err := b.insp.QueueInfo(ctx, DefaultQueue)
	must(t, err)
	if qi.Pending != 3 {
		t.Errorf("pending = %d, want 3: a call whose WAIT ran out still enqueued", qi.Pending)
	}
}

// TestWaitReplicasAfterFailover: a master is killed and its replica
// promoted, with an empty script cache and no replica of its own. The
// first enqueue to one of its partitions, sent as the master dies and
// tried again as a producer would, returns ErrNotReplicated one
// WaitTimeout after the client found the promoted master, not two: every
// WAIT it sent fits in one WaitTimeout, and on the wall clock it returns
// within 1.5 WaitTimeouts of the client's slot map naming the new master.
func TestWaitReplicasAfterFailover(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	cl := redistest.StartClusterWithReplicas(t, 3)
	// the client users make (no resend after a lost reply, a slot map
	// reloaded after a failed call), reading longer than any WAIT
	rdb := NewRedisClientFromOptions(&redis.UniversalOptions{Addrs: cl.Addrs(), IsClusterMode: true, ReadTimeout: 4 * timeout})
	t.Cleanup(func() { _ = rdb.Close() })
	cc := rdb.(*redis.ClusterClient)
	hook := &waitHook{}
	cc.OnNewNode(func(node *redis.Client) { node.AddHook(hook) }) // WAIT goes to the node's own client
	ctx := context.Background()
	cfg := Config{Prefix: redistest.Prefix(t), WaitReplicas: 1, WaitTimeout: timeout}
	client, err := NewClient(rdb, cfg)
	must(t, err)
	// a replicated enqueue first: the master's cache holds the scripts
	if _, err := client.Enqueue(ctx, NewRawTask("t", nil), In("q")); err != nil {
		t.Fatalf("enqueue before the failover: %v", err)
	}
	if waits, _ := hook.take(); len(waits) == 0 {
		t.Fatal("the hook saw no WAIT: the test would prove nothing")
	}
	part := keys.For(cfg.Prefix, "q", 0).T
	master := cl.MasterOf(t, cl.Slot(t, part))

	start := time.Now()
	master.Kill(t)
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		for {
			call, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := client.Enqueue(call, NewRawTask("t", nil), In("q"))
			cancel()
			if err == nil || errors.Is(err, ErrNotReplicated) || time.Since(start) > time.Minute {
				done <- result{err, time.Since(start)}
				return
			}
			hook.take() // a call that failed before it reached a master: its WAITs count for nothing
		}
	}()
	// when the client's slot map names the promoted master
	var switched time.Duration
	for switched == 0 {
		if m, err := cc.MasterForKey(ctx, part); err == nil && m.Options().Addr != master.Addr {
			switched = time.Since(start)
		} else if time.Since(start) > time.Minute {
			t.Fatal("the client's slot map named the killed master for a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := <-done
	if !errors.Is(r.err, ErrNotReplicated) {
		t.Fatalf("the first enqueue after the promotion: %v; want ErrNotReplicated (the promoted master has no replica)", r.err)
	}
	waits, sum := hook.take()
	t.Logf("the client found the promoted master %v after the kill; the first enqueue returned after %v, with WAITs of %v ms", switched, r.took, waits)
	if len(waits) == 0 || sum > timeout.Milliseconds()+int64(len(waits)) {
		t.Errorf("the call sent WAITs of %v ms, %d ms in all; want at most the WaitTimeout, %v", waits, sum, timeout)
	}
	if r.took > switched+timeout*3/2 {
		t.Errorf("the first enqueue returned %v after the kill, %v after the client found the promoted master; want at most 1.5 x WaitTimeout (%v) after",
			r.took, r.took-switched, timeout)
	}
}
