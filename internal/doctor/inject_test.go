package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// fault writes one fault by raw commands, as a crash or a bug would leave
// it, among healthy data; it returns the ID of the task it concerns, if any.
type fault func(t *testing.T, r *rig) string

// The faults, one or more per check. Each takes what it needs from the
// head of the default queue's pending list.
var (
	// a lease past its deadline whose worker is gone
	fStuckLease fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		id, msg := takeHead(t, r.rdb, k)
		n := now(t, r.rdb)
		r.rdb.HSet(ctx, k.Msg(), id, msg)
		r.rdb.HSet(ctx, k.State(), id, record(t, "active", 1, 7, "ghost-1", n-60_000, 0))
		r.rdb.ZAdd(ctx, k.Active(), redis.Z{Score: float64(n - 30_000), Member: id})
		return id
	}
	// a record that says active, in no lease
	fOrphanActive fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		id, msg := takeHead(t, r.rdb, k)
		r.rdb.HSet(ctx, k.Msg(), id, msg)
		r.rdb.HSet(ctx, k.State(), id, record(t, "active", 1, 3, "ghost-2", now(t, r.rdb), 0))
		return id
	}
	// a record that says pending, in no pending list
	fOrphanPending fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		id, msg := takeHead(t, r.rdb, k)
		r.rdb.HSet(ctx, k.Msg(), id, msg)
		r.rdb.HSet(ctx, k.State(), id, record(t, "pending", 1, 4, "", 0, 0))
		return id
	}
	// a record that says scheduled, not in T:scheduled
	fOrphanScheduled fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		id, msg := takeHead(t, r.rdb, k)
		r.rdb.HSet(ctx, k.Msg(), id, msg)
		r.rdb.HSet(ctx, k.State(), id, record(t, "scheduled", 0, 0, "", 0, now(t, r.rdb)+200))
		return id
	}
	// a record that says dead, not in the dead feed
	fOrphanDead fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		id, msg := takeHead(t, r.rdb, k)
		r.rdb.HSet(ctx, k.Msg(), id, msg)
		r.rdb.HSet(ctx, k.State(), id, record(t, "dead", 1, 1, "", 0, 0))
		return id
	}
	// a message copy with no record, in no set
	fOrphanMessage fault = func(t *testing.T, r *rig) string {
		r.rdb.HSet(context.Background(), r.part("default").Msg(), "lost-1", "\x93\xa6lost-1\xa1t\xc0")
		return ""
	}
	// a record that does not decode
	fGarbageRecord fault = func(t *testing.T, r *rig) string {
		r.rdb.HSet(context.Background(), r.part("default").State(), "garbage-1", "\xc1not a record")
		return ""
	}
	// the in-flight list of a worker that is gone
	fOrphanInflight fault = func(t *testing.T, r *rig) string {
		k := r.part("default")
		id, msg := takeHead(t, r.rdb, k)
		r.rdb.RPush(context.Background(), k.Inflight("ghost-3"), msg)
		return id
	}
	// lease, schedule and feed entries with neither record nor message
	fDanglingEntries fault = func(t *testing.T, r *rig) string {
		k, ctx := r.part("default"), context.Background()
		n := now(t, r.rdb)
		r.rdb.ZAdd(ctx, k.Active(), redis.Z{Score: float64(n - 1000), Member: "nosuch-1"})
		r.rdb.ZAdd(ctx, k.Scheduled(), redis.Z{Score: float64(n + 3_600_000), Member: "nosuch-2"})
		r.rdb.ZAdd(ctx, k.Dead(), redis.Z{Score: 0, Member: "nosuch-3"})
		return ""
	}
	// a tombstone of a task in no list
	fStaleTomb fault = func(t *testing.T, r *rig) string {
		r.rdb.SAdd(context.Background(), r.part("default").Tomb(), "deleted-long-ago")
		return ""
	}
	// a uniqueness lock without TTL whose task is gone
	fDanglingLock fault = func(t *testing.T, r *rig) string {
		r.rdb.Set(context.Background(), r.part("default").Unique("ghost-order"), "gone-task", 0)
		return ""
	}
	// a TaskID claims hash that never expires
	fClaimsForever fault = func(t *testing.T, r *rig) string {
		r.rdb.HSet(context.Background(), r.part("default").T+":ids:30000:123:7", "some-id", "1")
		return ""
	}
	// a semaphore holder whose task holds no lease
	fDanglingHolder fault = func(t *testing.T, r *rig) string {
		r.rdb.ZAdd(context.Background(), keys.Semaphore(r.prefix, "s1"), redis.Z{Score: float64(now(t, r.rdb) + 3_600_000), Member: "gone-task:1"})
		return ""
	}
	// a quota lock that never expires
	fQuotaForever fault = func(t *testing.T, r *rig) string {
		r.rdb.Set(context.Background(), keys.QuotaFor(r.prefix, "default").Lock(), "3", 0)
		return ""
	}
)

// repairable are the faults --repair fixes.
var repairable = []fault{fStuckLease, fOrphanActive, fOrphanPending, fOrphanScheduled,
	fOrphanInflight, fDanglingEntries, fOrphanMessage, fStaleTomb, fDanglingLock, fClaimsForever, fDanglingHolder, fQuotaForever}

// TestFindsEachClass: each class of violation, written by raw commands
// among healthy data (tasks pending, tasks kept after they succeeded, a
// finished workflow), is found with its count.
func TestFindsEachClass(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var runs counter
	stop := r.serve(t, func(ctx context.Context, task *worker.Task) error { runs.count(task.ID); return nil }, "default")
	r.enqueue(t, 5, "kept", queue.Retention(time.Hour))
	w := queue.NewWorkflow()
	w.Add("a", queue.NewRawTask("wf", []byte("a")))
	w.Add("b", queue.NewRawTask("wf", []byte("b")), queue.After("a"))
	wfID, err := r.client.EnqueueWorkflow(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	r.settled(t, "default", func() bool { return runs.total() == 7 })
	stop()
	r.enqueue(t, 30, "later")
	if rep := r.audit(t, false); rep.Violations != 0 {
		t.Fatalf("before the faults: %d violations:%s", rep.Violations, describe(rep))
	}

	k := r.part("default")
	for _, f := range []fault{fStuckLease, fOrphanActive, fOrphanPending, fOrphanScheduled, fOrphanDead, fGarbageRecord, fOrphanInflight, fDanglingEntries, fOrphanMessage, fStaleTomb,
		fDanglingLock, fClaimsForever, fDanglingHolder, fQuotaForever} {
		f(t, r)
	}
	// a pending task whose record says it succeeded (and is in the feed)
	first, _ := r.rdb.Get(ctx, k.First()).Result()
	if first == "" {
		first = "0"
	}
	head, err := r.rdb.LIndex(ctx, k.ShardPrefix()+first, 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	hid, _ := wire.HeadID(head)
	r.rdb.HSet(ctx, k.State(), hid, record(t, "done", 1, 1, "", 0, 0))
	r.rdb.ZAdd(ctx, k.Done(), redis.Z{Score: 1, Member: hid})
	// a shard outside first..last, and a group's lease count with no lease
	r.rdb.RPush(ctx, k.ShardPrefix()+"99", "\x93\xa4xid1\xa1t\xc0")
	r.rdb.HSet(ctx, k.KeyActive(), "tenant-x", 2)
	// a fair count with no group's task, and a feed's rank counter reset
	r.rdb.IncrBy(ctx, k.T+":fn", 5)
	r.rdb.Set(ctx, keys.RankKey(k.Feed()), 1, 0)
	// the last node of the finished workflow waiting again
	wk := keys.Home(r.prefix, keys.HomeOf(wfID)).Workflow(wfID)
	if n, err := r.rdb.Exists(ctx, wk).Result(); err != nil || n != 1 {
		t.Fatalf("workflow key %s: %d, %v", wk, n, err)
	}
	r.rdb.HSet(ctx, wk, "s:b", "w")
	// a deleted queue's shard and a dictionary no type names
	r.rdb.RPush(ctx, keys.For(r.prefix, "gone", 0).ShardPrefix()+"0", "\x93\xa4xid2\xa1t\xc0")
	r.rdb.Set(ctx, r.prefix+":dict:nobody", "x", 0)

	rep := r.audit(t, false)
	want := map[string]int{
		"orphaned-records":    5, // active, pending, scheduled, dead, garbage
		"orphaned-messages":   1,
		"stuck-leases":        1,
		"orphaned-inflight":   1,
		"list-entries":        4, // a lease, a schedule and a dead entry without record; a pending one that says done
		"stale-tombstones":    1,
		"counters":            4, // a shard, T:keyactive, T:fn, T:feed:rank
		"uniqueness-locks":    1,
		"id-claims":           1,
		"semaphore-holders":   1,
		"quota-locks":         1,
		"waiting-nodes":       1,
		"deleted-queues":      1,
		"unused-dictionaries": 1,
	}
	got := counts(rep)
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d, want %d", c, got[c], n)
		}
	}
	for c := range got {
		if _, ok := want[c]; !ok {
			t.Errorf("%s: %d, want none", c, got[c])
		}
	}
	if len(Checks) != len(want) {
		t.Errorf("%d checks, %d tested", len(Checks), len(want))
	}
	if t.Failed() {
		t.Log(describe(rep))
	}
	for _, f := range rep.Findings {
		if f.Count > 0 && (len(f.Examples) == 0 || strings.TrimSpace(f.Examples[0]) == "") {
			t.Errorf("%s: no example", f.Check)
		}
	}
}

// TestRepairRunsEveryTaskOnce: --repair fixes every repairable fault, a
// second run finds nothing, and a worker run over the repaired Redis runs
// every task exactly once (the one whose record said dead stays dead).
func TestRepairRunsEveryTaskOnce(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ids := r.enqueue(t, 30, "t")
	for _, f := range repairable {
		f(t, r)
	}
	dead := map[string]bool{wire.PublicID(fOrphanDead(t, r)): true}
	rep := r.audit(t, true)
	if rep.Violations == 0 || rep.Repaired != rep.Violations {
		t.Fatalf("repair: %d violations, %d repaired:%s", rep.Violations, rep.Repaired, describe(rep))
	}
	t.Logf("repaired %d:%s", rep.Repaired, describe(rep))
	if again := r.audit(t, true); again.Violations != 0 {
		t.Fatalf("after the repair: %d violations:%s", again.Violations, describe(again))
	}
	var runs counter
	stop := r.serve(t, func(ctx context.Context, task *worker.Task) error { runs.count(task.ID); return nil }, "default")
	r.settled(t, "default", func() bool { return runs.total() >= len(ids)-len(dead) })
	stop()
	for _, id := range ids {
		want := 1
		if dead[id] {
			want = 0
		}
		if got := runs.get(id); got != want {
			t.Errorf("task %s ran %d times, want %d", id, got, want)
		}
	}
	if runs.total() != len(ids)-len(dead) {
		t.Errorf("%d runs, want %d", runs.total(), len(ids)-len(dead))
	}
	for id := range dead {
		ti, err := r.insp.GetTask(ctx, "default", id)
		if err != nil || ti.State != queue.StateDead {
			t.Errorf("the dead task %s: %v, %v", id, ti, err)
		}
	}
	if rep := r.audit(t, false); rep.Violations != 0 {
		t.Fatalf("after the run: %d violations:%s", rep.Violations, describe(rep))
	}
}
