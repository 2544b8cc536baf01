package worker

import (
	"context"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestClusterFailover: producers and workers run on a cluster of 3
// masters with a replica each, a queue of 3 partitions on the 3 masters;
// one master is killed with SIGKILL. Its replica is promoted, and
// producers and workers go on by themselves: the refusals and redirects
// of the failover (connection refused, CLUSTERDOWN, MOVED, READONLY) are
// retried and never end a fetcher. The killed node comes back as a
// replica. Every task acknowledged to a producer runs (with
// WaitReplicas=1: none is lost; without, the few writes the replica had
// not received when the master died are lost, and counted; while the
// promoted master has no replica, enqueues answer ErrNotReplicated). The figures
// are logged for the README (go test -v -run TestClusterFailover ./worker).
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1} {
		t.Run(map[int]string{0: "Async", 1: "WaitReplicas"}[n], func(t *testing.T) {
			t.Parallel()
			rounds := 1
			if soak() {
				rounds = 3
			}
			f := failover(t, n, rounds)
			t.Logf("failover figures (WaitReplicas=%d, %d kill(s)): %d acknowledged, %d lost, %d ran twice, %d not replicated, %d failed; producers back after %v, workers after %v",
				n, rounds, f.acked, f.lost, f.twice, f.notRepl, f.failed, f.producers, f.workers)
			if n > 0 && f.lost > 0 {
				t.Errorf("%d acknowledged enqueues lost with WaitReplicas=%d", f.lost, n)
			}
			if f.producers < 0 || f.workers < 0 {
				t.Errorf("the affected partitions did not recover: producers %v, workers %v", f.producers, f.workers)
			}
		})
	}
}

// failover runs the failover scenario rounds times (a master killed per
// round) and returns the figures of the worst round, with the losses and
// duplicates of all rounds.
func failover(t *testing.T, waitReplicas, rounds int) figures {
	cl := redistest.StartClusterWithReplicas(t, 3)
	rdb := clusterClient(t, cl)
	prefix := redistest.Prefix(t)
	q, masters := spreadQueue(t, cl, prefix, 3)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}, WaitReplicas: waitReplicas}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	l := newLedger()
	h := HandlerFunc(func(ctx context.Context, task *Task) error {
		l.ran(task)
		return nil
	})
	for range 2 {
		cfg := Config{Config: qcfg, Queues: map[string]int{q: 1}, Concurrency: 8,
			Lease: 10 * time.Second, Heartbeat: time.Second}
		cfg.Logger = testLogger(t)
		startServer(t, rdb, cfg, h)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := produce(ctx, client, q, 4, 20_000, l)
	worst := figures{}
	for round := range rounds {
		time.Sleep(2 * time.Second) // a steady state first
		victim := masters[round%3]
		affected := map[int]bool{}
		for p, m := range masters {
			if m == victim {
				affected[p] = true
			}
		}
		l.reset()
		l.setMark()
		victim.Kill(t)
		cl.WaitHealthy(t) // the replica promoted
		promoted := time.Now()
		deadline := time.Now().Add(30 * time.Second)
		for !l.activeSince(promoted, affected) {
			if time.Now().After(deadline) {
				t.Fatalf("partitions %v (on the killed master) took or ran no task within 30s of the promotion: %v", affected, l)
			}
			time.Sleep(10 * time.Millisecond)
		}
		victim.Restart(t) // back as a replica of the promoted node
		cl.WaitHealthy(t)
		for p := range affected {
			masters[p] = cl.MasterOf(t, cl.Slot(t, keys.For(prefix, q, p).T))
		}
		time.Sleep(time.Second)
		f := l.figures(affected)
		worst.producers, worst.workers = max(worst.producers, f.producers), max(worst.workers, f.workers)
	}
	stop()
	<-done
	waitDrained(t, insp, q, l)
	time.Sleep(500 * time.Millisecond) // the last handlers record their runs
	f := l.figures(nil)
	f.producers, f.workers = worst.producers, worst.workers
	return f
}

// TestClusterManualFailover: a replica takes over from its master by
// CLUSTER FAILOVER while the workers' fetchers block on the empty queue.
// The old master, now a replica, ends the blocked pops with UNBLOCKED, and
// answers the next calls with MOVED; the fetchers retry, follow the slot,
// and run what is enqueued next, each task once.
func TestClusterManualFailover(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t, 3)
	rdb := clusterClient(t, cl)
	seen := watchErrors(rdb)
	prefix := redistest.Prefix(t)
	q, masters := spreadQueue(t, cl, prefix, 3)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	l := newLedger()
	cfg := Config{Config: qcfg, Queues: map[string]int{q: 1}, Concurrency: 4}
	cfg.Logger = testLogger(t)
	startServer(t, rdb, cfg, HandlerFunc(func(ctx context.Context, task *Task) error {
		l.ran(task)
		return nil
	}))
	ctx := context.Background()
	enqueue := func(n int) {
		for range n {
			info, err := client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In(q))
			l.enqueued(info, err)
			must(t, err)
		}
	}
	ranAll := func() bool { f := l.figures(nil); return f.lost == 0 }
	enqueue(30)
	waitFor(t, 20*time.Second, "the first tasks to run", ranAll)
	time.Sleep(1500 * time.Millisecond) // the fetchers block in their slices

	replica := cl.ReplicaOf(t, masters[0])
	rc := replica.Client(t)
	must(t, rc.Do(ctx, "CLUSTER", "FAILOVER").Err())
	waitFor(t, 30*time.Second, "the replica to take over", func() bool {
		return cl.MasterOf(t, cl.Slot(t, keys.For(prefix, q, 0).T)) == replica
	})
	cl.WaitHealthy(t)
	enqueue(30)
	waitFor(t, 30*time.Second, "the tasks enqueued after the failover to run", ranAll)
	f := l.figures(nil)
	t.Logf("manual failover: %d tasks, %d ran twice; node errors seen: %v", f.acked, f.twice, seen)
	if f.twice > 0 {
		t.Errorf("%d tasks ran twice", f.twice)
	}
	if seen.get("UNBLOCKED")+seen.get("MOVED") == 0 {
		t.Errorf("neither UNBLOCKED nor MOVED met: the failover was not shown to the fetchers (%v)", seen)
	}
}
