package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestFairCrash kills a worker process (SIGKILL) in the middle of a
// handler while it runs keyed tasks, then runs a new worker alone: no
// task is lost, only the killed worker's started tasks run twice, and
// the new worker starts the keys in strict turns, partition by partition.
//
// It runs on one Redis server and on a Redis Cluster of 3 masters, the
// queue's 3 partitions one on each master, with three keys in each.
func TestFairCrash(t *testing.T) {
	t.Parallel()
	t.Run("Single", func(t *testing.T) {
		t.Parallel()
		testFairCrash(t, singleRig(t, "fair"))
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		testFairCrash(t, clusterRig(t, redistest.StartCluster(t, 3)))
	})
}

func testFairCrash(t *testing.T, b *rig) {
	ctx := context.Background()
	parts := max(b.base.Partitions, 1)
	// three keys in each partition, each with a backlog enqueued after
	// the other's: FIFO would run them key by key
	const perKey = 40
	byPart := map[int][]string{}
	keyPart := map[string]int{}
	for i := 0; len(keyPart) < 3*parts; i++ {
		key := fmt.Sprint("tenant", i)
		if p := layout.Pick(key, parts); len(byPart[p]) < 3 {
			byPart[p] = append(byPart[p], key)
			keyPart[key] = p
		}
	}
	var tasks []*queue.Task
	for p := range parts {
		for _, key := range byPart[p] {
			for range perKey {
				tasks = append(tasks, queue.NewRawTask("fair", []byte(key), queue.Group(key)))
			}
		}
	}
	infos, err := b.client.EnqueueMany(ctx, tasks, queue.In(b.queue))
	must(t, err)
	total := len(infos)
	k := recKeysFor(b.qcfg.Prefix)

	base := b.base
	base.Lease, base.Heartbeat, base.Sleep, base.Handler = 2*time.Second, 400*time.Millisecond, 5*time.Millisecond, handleOrder
	killer := base
	killer.Concurrency, killer.Crash, killer.CrashAt = 2, crashMidHandler, 5
	kc := startChild(t, "killer", killer)
	if !eventually(30*time.Second, kc.exited) {
		t.Fatalf("the worker never reached its crash point:\n%s", kc.tail(40))
	}
	if !kc.killedBySIGKILL() {
		t.Fatalf("the worker exited with %s, want death by SIGKILL mid-handler:\n%s", kc.state(), kc.tail(40))
	}
	before := b.rdb.LLen(ctx, k.order()).Val()

	healthy := base
	healthy.Concurrency = 1
	h := startChild(t, "healthy", healthy)
	if !eventually(60*time.Second, func() bool {
		n, err := b.rdb.HLen(ctx, k.completions()).Result()
		return err == nil && n >= int64(total)
	}) {
		t.Errorf("timed out after 60s waiting for every task to complete: %d of %d did", b.rdb.HLen(ctx, k.completions()).Val(), total)
	}
	h.stop(t)

	// nothing lost; a task ran twice only if the killed handler started it
	starts := hashInts(t, b.rdb, k.starts())
	completions := hashInts(t, b.rdb, k.completions())
	mayRepeat := members(t, b.rdb, k.started(kc.pid))
	for _, info := range infos {
		if completions[info.ID] < 1 {
			t.Errorf("task %s never completed (started %d times)", info.ID, starts[info.ID])
		}
		if starts[info.ID] > 1 && !mayRepeat[info.ID] {
			t.Errorf("task %s started %d times, but the killed worker had not started it", info.ID, starts[info.ID])
		}
	}

	// the new worker's starts, per partition: each window of three has
	// the three keys while every key has tasks left
	order, err := b.rdb.LRange(ctx, k.order(), before, -1).Result()
	must(t, err)
	seq := map[int][]string{}
	for _, key := range order {
		seq[keyPart[key]] = append(seq[keyPart[key]], key)
	}
	for p := range parts {
		s := seq[p]
		// before the kill at most a dozen tasks of a partition started,
		// so every key has tasks left through the first 24
		s = s[:min(len(s), 24)]
		for i := 0; i+3 <= len(s); i++ {
			if s[i] == s[i+1] || s[i] == s[i+2] || s[i+1] == s[i+2] {
				t.Fatalf("partition %d: the new worker started %v: not in turns (at %d)", p, s, i)
			}
		}
		if len(s) < 24 {
			t.Fatalf("partition %d: only %d starts after the kill", p, len(s))
		}
	}

	qi, err := b.insp.QueueInfo(ctx, b.queue)
	must(t, err)
	if qi.Pending != 0 || qi.Active != 0 || qi.Waiting != 0 || qi.ActiveGroups != 0 {
		t.Errorf("queue at the end: %+v, want empty", qi)
	}
	for p := range parts {
		checkFairPartition(t, b.rdb, keys.For(b.qcfg.Prefix, b.queue, p))
	}
}
