package quota

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/script"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is one test's queue of 4 partitions on a private redis-server.
type env struct {
	rdb redis.UniversalClient
	q   Queue
}

func setup(t *testing.T, rdb redis.UniversalClient) *env {
	t.Helper()
	if rdb == nil {
		rdb = redistest.Start(t).Client(t)
	}
	must(t, script.LoadAll(context.Background(), rdb))
	return &env{rdb: rdb, q: Queue{Prefix: redistest.Prefix(t), Name: "q", Partitions: 4, ShardSize: 1000}}
}

func (e *env) part(i int) keys.Partition { return keys.For(e.q.Prefix, e.q.Name, i) }

// quotas returns each partition's concurrency quota (-1 = none).
func (e *env) quotas(t *testing.T) []int {
	t.Helper()
	out := make([]int, e.q.Partitions)
	for i := range out {
		v, err := e.rdb.HGet(context.Background(), e.part(i).Limits(), "cq").Int()
		if err == redis.Nil {
			v = -1
		} else {
			must(t, err)
		}
		out[i] = v
	}
	return out
}

// backlog pushes n pending items into partition i's first shard.
func (e *env) backlog(t *testing.T, i, n int) {
	t.Helper()
	ctx := context.Background()
	k := e.part(i)
	first, _ := e.rdb.Get(ctx, k.First()).Int()
	items := make([]any, n)
	for j := range items {
		items[j] = "task"
	}
	must(t, e.rdb.RPush(ctx, k.ShardPrefix()+strconv.Itoa(first), items...).Err())
}

// running makes n leases in partition i (as pop would), or clears them.
func (e *env) running(t *testing.T, i, n int) {
	t.Helper()
	ctx := context.Background()
	k := e.part(i)
	must(t, e.rdb.Del(ctx, k.Active()).Err())
	for j := range n {
		must(t, e.rdb.ZAdd(ctx, k.Active(), redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "t" + strconv.Itoa(j)}).Err())
	}
}

// leaseScript sets partition's running tasks to ARGV[1], or to its
// quota if that is less, atomically as pop checks the quota.
var leaseScript = redis.NewScript(`
local q = tonumber(redis.call('HGET', KEYS[1], 'cq') or -1)
local n = tonumber(ARGV[1])
if q >= 0 then n = math.min(n, q) end
redis.call('DEL', KEYS[2])
for j = 1, n do redis.call('ZADD', KEYS[2], ARGV[2], 't' .. j) end
return n`)

// lease makes up to n leases in partition i, as many as its quota allows.
func (e *env) lease(t *testing.T, i, n int) {
	t.Helper()
	k := e.part(i)
	must(t, leaseScript.Run(context.Background(), e.rdb, []string{k.Limits(), k.Active()}, n, time.Now().Add(time.Hour).UnixMilli()).Err())
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += max(x, 0)
	}
	return s
}

func (e *env) rebalance(t *testing.T) {
	t.Helper()
	done, err := Rebalance(context.Background(), e.rdb, e.q)
	must(t, err)
	if !done {
		t.Fatal("rebalance did not run")
	}
}

// TestQuotasFollowDemand: a limit of 8 over 4 partitions starts evenly
// split, moves to the one partition with a backlog, and moves on when the
// backlog does, never taking back slots of running tasks.
func TestQuotasFollowDemand(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: 8}))
	if q := e.quotas(t); fmt.Sprint(q) != "[2 2 2 2]" {
		t.Fatalf("quotas after Set with no demand: %v, want an even split", q)
	}

	e.backlog(t, 1, 50)
	e.rebalance(t)
	if q := e.quotas(t); fmt.Sprint(q) != "[0 8 0 0]" {
		t.Fatalf("quotas with every task in partition 1: %v, want all 8 there", q)
	}

	// partition 1 runs 5 of its tasks; the backlog moves to partition 3
	e.running(t, 1, 5)
	must(t, e.rdb.Del(ctx, e.part(1).ShardPrefix()+"0").Err())
	e.backlog(t, 3, 50)
	e.rebalance(t)
	if q := e.quotas(t); fmt.Sprint(q) != "[0 5 0 3]" {
		t.Fatalf("quotas with 5 running in 1 and a backlog in 3: %v, want 1 to keep its 5 running, 3 the rest", q)
	}
	e.running(t, 1, 0) // they finish
	e.rebalance(t)
	if q := e.quotas(t); fmt.Sprint(q) != "[0 0 0 8]" {
		t.Fatalf("quotas once 1's tasks finished: %v, want all 8 in 3", q)
	}
	home, err := e.rdb.HGetAll(ctx, keys.QuotaFor(e.q.Prefix, e.q.Name).Quota()).Result()
	must(t, err)
	if home["c:3"] != "8" || home["c:1"] != "0" || home["conc"] != "8" {
		t.Fatalf("home records %v, want c:3 = 8, c:1 = 0, conc = 8", home)
	}

	// a lower limit: running tasks keep their slots, nothing new starts
	e.running(t, 3, 6)
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: 4}))
	if q := e.quotas(t); q[3] != 6 || sum(q) != 6 {
		t.Fatalf("quotas after lowering the limit to 4 with 6 running in 3: %v, want [0 0 0 6]", q)
	}
	e.running(t, 3, 2)
	e.rebalance(t)
	if q := e.quotas(t); sum(q) != 4 || q[3] < 2 {
		t.Fatalf("quotas once 3 runs 2: %v, want 4 in all, 3 keeping at least its 2", q)
	}

	// no limit: the quotas go
	must(t, Set(ctx, e.rdb, e.q, Limits{}))
	if q := e.quotas(t); fmt.Sprint(q) != "[-1 -1 -1 -1]" {
		t.Fatalf("quotas after removing the limit: %v, want none", q)
	}
	if done, err := Rebalance(ctx, e.rdb, e.q); err != nil || done {
		t.Fatalf("Rebalance without a limit: %v, %v: want nothing done", done, err)
	}
}

// TestQuotaNewlyLimited: a queue that runs unlimited gets a limit below
// what runs: the partitions keep their running tasks and start nothing
// until the total is under the limit.
func TestQuotaNewlyLimited(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	e.running(t, 0, 3)
	e.running(t, 2, 4)
	e.backlog(t, 1, 10)
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: 5}))
	if q := e.quotas(t); fmt.Sprint(q) != "[3 0 4 0]" {
		t.Fatalf("quotas: %v, want [3 0 4 0]: 7 run, over the limit of 5, so none is granted", q)
	}
	e.running(t, 0, 0)
	e.running(t, 2, 1)
	e.rebalance(t)
	if q := e.quotas(t); sum(q) != 5 || q[2] < 1 || q[1] < 3 {
		t.Fatalf("quotas once 1 runs: %v, want 5 in all, partition 1 (the backlog) the most", q)
	}
}

// TestQuotaFencing: a rebalance that lost its lock cannot change a
// partition a newer one has read, nor record at the home.
func TestQuotaFencing(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: 8}))
	home := keys.QuotaFor(e.q.Prefix, e.q.Name)
	k := e.part(0)
	set := func(epoch int, cq string) []int {
		v, err := ints(script.QuotaSet.Run(ctx, e.rdb, []string{k.Limits(), k.Active(), k.RateLog(), k.QuotaEpoch()}, epoch, "", 1000, cq, ""))
		must(t, err)
		return v
	}
	report := func(epoch int) []int {
		v, err := ints(script.QuotaReport.Run(ctx, e.rdb, []string{k.Limits(), k.Active(), k.RateLog(), k.First(), k.Last(), k.QuotaEpoch()}, epoch, "", 1000, k.ShardPrefix(), 1000))
		must(t, err)
		return v
	}
	epoch, _ := e.rdb.Get(ctx, home.Epoch()).Int()
	old := epoch
	if v := report(old + 1); v[0] != 1 { // a newer rebalance reads partition 0
		t.Fatalf("report of a new epoch: %v", v)
	}
	if v := set(old, "8"); v[0] != 0 {
		t.Fatalf("quota_set of the older epoch after a newer report: %v, want refused", v)
	}
	if v := report(old); v[0] != 0 {
		t.Fatalf("report of the older epoch: %v, want refused", v)
	}
	if q := e.quotas(t); q[0] != 2 {
		t.Fatalf("partition 0's quota %d, want 2 unchanged", q[0])
	}
	// the home refuses a commit whose lock is gone
	v, err := ints(script.QuotaCommit.Run(ctx, e.rdb, []string{home.Lock(), home.Quota()}, old, 8, 0, 2, 8, -1, -1, 2, 2, -1, -1, 2, 2, -1, -1, 2, 2, -1, -1))
	must(t, err)
	if v[0] != 0 {
		t.Fatalf("commit without the lock: %v, want refused", v)
	}
	// while another holds the lock, Rebalance does nothing
	must(t, e.rdb.Set(ctx, home.Lock(), 999, time.Minute).Err())
	if done, err := Rebalance(ctx, e.rdb, e.q); err != nil || done {
		t.Fatalf("Rebalance under another's lock: %v, %v", done, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := Set(sctx, e.rdb, e.q, Limits{Concurrency: 3}); err == nil {
		t.Fatal("Set under another's lock returned nil, want its context's error")
	}
}

// TestQuotaNeverOverLimit: rebalances from several goroutines race while
// demand and running tasks change at random; after every step the
// partitions' quotas and the home's records each sum to at most the
// limit (once running tasks fit under it).
func TestQuotaNeverOverLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	const limit = 6
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: limit}))
	home := keys.QuotaFor(e.q.Prefix, e.q.Name)
	stop := time.Now().Add(3 * time.Second)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300 && time.Now().Before(stop); i++ {
				select {
				case <-done:
					return
				default:
				}
				if _, err := Rebalance(ctx, e.rdb, e.q); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var fail string
	for step := 0; step < 100 && time.Now().Before(stop) && fail == ""; step++ {
		p := step % e.q.Partitions
		// demand moves around; a partition runs at most its quota (as pop ensures)
		must(t, e.rdb.Del(ctx, e.part(p).ShardPrefix()+"0").Err())
		e.backlog(t, (step*7)%e.q.Partitions, 1+step%9)
		e.lease(t, p, step%4)
		// one script reads every quota and record at one instant (a single
		// server: the keys' slots do not matter here)
		ks := []string{home.Quota()}
		for i := range e.q.Partitions {
			ks = append(ks, e.part(i).Limits())
		}
		v, err := sumScript.Run(ctx, e.rdb, ks).Int64Slice()
		must(t, err)
		if v[0] > limit || v[1] > limit {
			fail = fmt.Sprintf("step %d: partitions' quotas sum to %d, home records to %d: over the limit %d", step, v[0], v[1], limit)
		}
	}
	close(done)
	wg.Wait()
	if fail != "" {
		t.Fatal(fail)
	}
}

// sumScript returns the sum of the partitions' quotas (KEYS[2..]) and of
// the home's records (KEYS[1]), read at one instant.
var sumScript = redis.NewScript(`
local q, r = 0, 0
for i = 2, #KEYS do
  q = q + math.max(0, tonumber(redis.call('HGET', KEYS[i], 'cq') or 0))
  r = r + math.max(0, tonumber(redis.call('HGET', KEYS[1], 'c:' .. (i - 2)) or 0))
end
return {q, r}`)

// TestQuotaRunOverFewerPartitions: a rebalance whose worker knows fewer
// partitions than the home has records for (it has not read a layout that
// grew, or the layout shrank) still counts the others' quotas: the sum
// stays within the limit. The partitions it did not know keep their
// quotas while they have demand; once a partition past the served count is
// idle, its quota and record go, and its share moves to the served ones.
func TestQuotaRunOverFewerPartitions(t *testing.T) {
	t.Parallel()
	e := setup(t, nil)
	ctx := context.Background()
	const limit = 4
	must(t, Set(ctx, e.rdb, e.q, Limits{Concurrency: limit})) // 1 each over 4
	e.running(t, 2, 1)
	e.backlog(t, 2, 5) // partition 2 is busy and has work waiting
	e.backlog(t, 0, 8)
	e.backlog(t, 1, 8)

	stale := *e
	stale.q.Partitions = 2
	for range 3 {
		stale.rebalance(t)
		if q := e.quotas(t); sum(q) > limit {
			t.Fatalf("quotas %v after a rebalance over 2 of 4 partitions: sum %d, over the limit %d", q, sum(q), limit)
		}
	}
	if q := e.quotas(t); q[2] < 1 {
		t.Fatalf("quotas %v: partition 2 runs a task and has a backlog, yet lost its quota", q)
	}

	// partitions 2 and 3 go idle (drained, as after a shrink): their
	// shares move to 0 and 1, and the home forgets their records
	e.running(t, 2, 0)
	must(t, e.rdb.Del(ctx, e.part(2).ShardPrefix()+"0").Err())
	stale.rebalance(t)
	stale.rebalance(t)
	q := e.quotas(t)
	if q[0]+q[1] != limit || max(q[2], 0)+max(q[3], 0) != 0 {
		t.Fatalf("quotas %v: want the whole limit %d on partitions 0 and 1, none left on the idle 2 and 3", q, limit)
	}
	home := keys.QuotaFor(e.q.Prefix, e.q.Name)
	for _, f := range []string{"c:2", "c:3"} {
		if ok, err := e.rdb.HExists(ctx, home.Quota(), f).Result(); err != nil || ok {
			t.Fatalf("home record %s of an idle partition past the served 2: %v, %v; want it gone", f, ok, err)
		}
	}
}
