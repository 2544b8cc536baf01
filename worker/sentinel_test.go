package worker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestSentinelFailover: a master, a replica and three Sentinels, with
// the client queue.NewRedisClient makes of a redis+sentinel:// URL (the
// go-redis failover client). Producers and workers run while the master is
// failed over twice: once by SENTINEL FAILOVER (the old master is demoted
// under its clients: READONLY for writes, UNBLOCKED for blocked pops),
// once by SIGKILL. Both go on by themselves; every acknowledged task runs;
// the Inspector reads the queue through the same client.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	st := redistest.StartSentinel(t)
	c, err := queue.NewRedisClient(st.URL() + "&dial_timeout=1s&read_timeout=2s&write_timeout=2s")
	must(t, err)
	rdb := c.(*redis.Client)
	t.Cleanup(func() { _ = rdb.Close() })
	seen := &errClasses{n: map[string]int{}}
	rdb.AddHook(seen)
	prefix := redistest.Prefix(t)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{"s": 2}}
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
		cfg := Config{Config: qcfg, Queues: map[string]int{"s": 1}, Concurrency: 4,
			Lease: 10 * time.Second, Heartbeat: time.Second}
		cfg.Logger = testLogger(t)
		startServer(t, rdb, cfg, h)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := produce(ctx, client, "s", 3, 20_000, l)
	all := map[int]bool{0: true, 1: true}
	hows := []string{"SENTINEL FAILOVER"}
	if soak() {
		// A SIGKILLed master restarts empty (no persistence here) and, under
		// a heavy load, was once seen to cost the dataset before Sentinel
		// made it a replica: a Redis hazard, not shardq's, but not for make
		// test. SHARDQ_SOAK=1 runs it.
		hows = append(hows, "SIGKILL")
	}
	for _, how := range hows {
		time.Sleep(1500 * time.Millisecond)
		old := st.Master(t)
		l.reset()
		l.setMark()
		if how == "SIGKILL" {
			old.Kill(t)
		} else {
			sc := redis.NewSentinelClient(&redis.Options{Addr: st.Sentinels[0].Addr})
			must(t, sc.Failover(context.Background(), redisproc.SentinelMaster).Err())
			_ = sc.Close()
		}
		waitFor(t, 60*time.Second, "a new master", func() bool { return st.Master(t) != old })
		promoted := time.Now()
		deadline := time.Now().Add(30 * time.Second)
		for !l.activeSince(promoted, all) {
			if time.Now().After(deadline) {
				t.Fatalf("after %s, no task taken and run within 30s: %v", how, l)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if how == "SIGKILL" {
			old.Restart(t) // back, as a replica once the Sentinels see it
		}
		st.WaitReady(t)
		time.Sleep(time.Second)
		f := l.figures(all)
		t.Logf("%s: producers back after %v, workers after %v", how, f.producers, f.workers)
	}
	stop()
	<-done
	waitDrained(t, insp, "s", l)
	time.Sleep(500 * time.Millisecond)
	f := l.figures(nil)
	t.Logf("sentinel figures: %d acknowledged, %d lost, %d ran twice, %d failed enqueues %v; errors seen: %v",
		f.acked, f.lost, f.twice, f.failed, f.errs, seen)
	qi, err := insp.QueueInfo(context.Background(), "s")
	must(t, err)
	// the counters are asynchronously replicated writes too: a kill may
	// lose the last increments, so only their order of size is checked
	if qi.SucceededTotal < int64(f.acked)/2 || qi.SucceededTotal > int64(f.acked+f.notRepl) {
		t.Errorf("the Inspector reports %d succeeded of %d acknowledged", qi.SucceededTotal, f.acked)
	}
}
