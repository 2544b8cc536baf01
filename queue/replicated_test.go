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
		client, err := NewClient(rdb, patient)
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
		want := fmt.Sprintf("1 of 2 replicas within %v", 50*time.Millisecond)
		if !strings.Contains(be.Errs[0].Error(), want) {
			t.Errorf("error %q does not say %q", be.Errs[0], want)
		}
	})
}

// TestWaitReplicasSingleNode: on one server (no replica) WaitReplicas 1
// reports ErrNotReplicated and the task is enqueued; bad settings are
// ErrInvalidConfig.
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
	for _, c := range []Config{{WaitReplicas: -1}, {WaitReplicas: 1, WaitTimeout: -time.Second}} {
		if _, err := NewClient(b.rdb, c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewClient(%+v) = %v, want ErrInvalidConfig", c, err)
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
