package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// bench --fair measures fair queues: how long a group's first task waits
// behind another group's backlog, what 10,000 groups cost processing and
// memory against a plain queue, and how weights share the starts. With
// --cluster it measures the wait on a private 3-master Redis Cluster.

// The isolation runs' fixed shape: one worker with 8 handlers of 5 ms,
// group A's backlog waiting, then group B enqueuing 20 tasks, 30 times.
const (
	fairConcurrency = 8
	fairHandler     = 5 * time.Millisecond
	fairRounds      = 30
	fairBTasks      = 20
	fairGroupLimit  = 2
	// fairGroups is how many groups share the processing and memory runs.
	fairGroups = 10_000
	// fairPartitions is the cluster queue's partition count: 2 on each
	// of the 3 masters, so B's group can sit in A's partition, in another
	// partition on A's master, or on another master.
	fairPartitions = 6
	fairWaitGoalMS = 50
)

// The placements of B's group against A's on a cluster.
const (
	placeSamePartition = "same partition"
	placeSameMaster    = "other partition, same master"
	placeOtherMaster   = "other master"
)

// fairBench is one bench --fair invocation, on one server or a cluster.
type fairBench struct {
	*bench
	backlogs []int
	label    string // "" on one server; "cluster 3 masters, " on the cluster
}

// isoSetup is a queue the isolation runs use: A's group, and for each
// placement the groups B enqueues under, a new one each round.
type isoSetup struct {
	q       string
	aGroup  string
	places  []string
	bGroups map[string][]string
}

// parseBacklogs reads --backlogs: comma-separated task counts, each at
// least 1,000.
func parseBacklogs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			return nil, fmt.Errorf("%w: --backlogs: %q: want task counts of at least 1000, comma-separated", errUsage, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runFair runs bench --fair: on --redis or a private redis-server, or with
// --cluster on a private 3-master cluster.
func (c *benchCommand) runFair(ctx context.Context, m *Main, f benchFlags, backlogs []int) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	prefix := "shardq-bench-" + wire.Nonce()
	if f.cluster {
		cl, err := redisproc.StartCluster(3)
		if err != nil {
			return fmt.Errorf("start a private 3-master Redis Cluster: %w", err)
		}
		defer cl.Close()
		addrs := cl.Addrs()
		rdb, err := queue.NewRedisClient("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		if err != nil {
			return err
		}
		defer rdb.Close()
		fmt.Fprintf(m.Stderr, "started a private 3-master Redis Cluster at %s (stopped on exit)\n", strings.Join(addrs, ", "))
		fb := &fairBench{bench: &bench{m: m, f: f, rdb: rdb, cfg: queue.Config{Prefix: prefix}}, backlogs: backlogs,
			label: "cluster 3 masters, "}
		return fb.finish(ctx, fb.clusterIsolation(ctx))
	}
	rdb, closeRedis, err := m.connect(ctx, f.redisURL, true, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	fb := &fairBench{bench: &bench{m: m, f: f, rdb: rdb, cfg: queue.Config{Prefix: prefix}}, backlogs: backlogs}
	defer fb.cleanup()
	for _, step := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"isolation", func(ctx context.Context) error {
			return fb.isolation(ctx, isoSetup{q: "iso", aGroup: "A", places: []string{placeSamePartition},
				bGroups: map[string][]string{placeSamePartition: roundGroups("B", func(string) bool { return true })}})
		}},
		{"groups", fb.groupsAgainstPlain},
		{"memory", fb.memory},
		{"weights", fb.weights},
	} {
		fb.progress("%s ...", step.name)
		if err := step.fn(ctx); err != nil {
			return fb.finish(ctx, fmt.Errorf("%s: %w", step.name, err))
		}
	}
	return fb.finish(ctx, nil)
}

// finish reports the figures, or says why the run stopped.
func (fb *fairBench) finish(ctx context.Context, err error) error {
	if err != nil {
		if dl, _ := ctx.Deadline(); !time.Now().Before(dl) {
			return fmt.Errorf("stopped by --timeout %s: %w", fb.f.timeout, context.DeadlineExceeded)
		}
		return err
	}
	fb.report(fb.m.Stdout)
	return nil
}

// roundGroups returns fairRounds group names opening with prefix that ok
// accepts: B's groups, a new one each round.
func roundGroups(prefix string, ok func(string) bool) []string {
	var out []string
	for i := 0; len(out) < fairRounds; i++ {
		if k := fmt.Sprint(prefix, "-", i); ok(k) {
			out = append(out, k)
		}
	}
	return out
}

// clusterIsolation runs the isolation figures on a queue of 6 partitions
// spread 2, 2, 2 over the masters, B's group placed against A's three ways.
func (fb *fairBench) clusterIsolation(ctx context.Context) error {
	cc, ok := fb.rdb.(*redis.ClusterClient)
	if !ok {
		return fmt.Errorf("not a cluster client: %T", fb.rdb)
	}
	var q string
	var owner []string
	for try := range clusterQueueTries {
		name := fmt.Sprintf("iso%d", try)
		owner = owner[:0]
		per := map[string]int{}
		for p := range fairPartitions {
			node, err := cc.MasterForKey(ctx, keys.For(fb.cfg.Prefix, name, p).T)
			if err != nil {
				return err
			}
			addr := node.Options().Addr
			owner = append(owner, addr)
			per[addr]++
		}
		if len(per) == 3 && per[owner[0]] == 2 && slices.Max(slices.Collect(maps.Values(per))) == 2 {
			q = name
			break
		}
	}
	if q == "" {
		return fmt.Errorf("no queue name of %d spreads %d partitions 2 per master", clusterQueueTries, fairPartitions)
	}
	fb.cfg.Partitions = map[string]int{q: fairPartitions}
	pick := func(k string) int { return layout.Pick(k, fairPartitions) }
	aGroup := roundGroups("A", func(k string) bool { return pick(k) == 0 })[0]
	s := isoSetup{q: q, aGroup: aGroup, places: []string{placeSamePartition, placeSameMaster, placeOtherMaster},
		bGroups: map[string][]string{
			placeSamePartition: roundGroups("B", func(k string) bool { return pick(k) == 0 }),
			placeSameMaster:    roundGroups("B", func(k string) bool { return pick(k) != 0 && owner[pick(k)] == owner[0] }),
			placeOtherMaster:   roundGroups("B", func(k string) bool { return owner[pick(k)] != owner[0] }),
		}}
	fb.progress("queue %s: partitions on %v; A's group %s in partition 0", q, owner, aGroup)
	return fb.isolation(ctx, s)
}

// isolation measures, for each of A's backlogs, with no group limit and
// with a GroupConcurrency of 2, for each placement of B's group: how long B's
// first task waits from the start of its enqueue to its start. A's
// backlog is topped up before each run.
func (fb *fairBench) isolation(ctx context.Context, s isoSetup) error {
	c, insp, err := fb.client()
	if err != nil {
		return err
	}
	for _, backlog := range fb.backlogs {
		for _, limited := range []bool{false, true} {
			lim, limText := queue.Limits{}, "no group limit"
			if limited {
				lim.GroupConcurrency, limText = fairGroupLimit, fmt.Sprintf("GroupConcurrency %d", fairGroupLimit)
			}
			for _, place := range s.places {
				if err := fb.topUp(ctx, c, insp, s.q, s.aGroup, backlog); err != nil {
					return err
				}
				// after the first fill, so the queue exists
				if err := insp.SetLimits(ctx, s.q, lim); err != nil {
					return err
				}
				waits, err := fb.isoRun(ctx, c, s, place)
				if err != nil {
					return fmt.Errorf("group A with %d waiting, %s, B in %s: %w", backlog, limText, place, err)
				}
				ki, err := insp.GetGroup(ctx, s.q, s.aGroup)
				if err != nil {
					return err
				}
				fb.progress("    A had %d tasks waiting at the end of the run", ki.Waiting)
				name := fmt.Sprintf("%sA %d waiting, %s, B's group in %s: B's first start", fb.label, backlog, limText, place)
				if len(s.places) == 1 {
					name = fmt.Sprintf("%sA %d waiting, %s: B's first start", fb.label, backlog, limText)
				}
				fb.addWaits(name, waits)
			}
		}
	}
	return insp.SetLimits(ctx, s.q, queue.Limits{})
}

// topUp enqueues tasks of group onto q until backlog of them wait.
func (fb *fairBench) topUp(ctx context.Context, c *queue.Client, insp *queue.Inspector, q, group string, backlog int) error {
	have := int64(0)
	if ki, err := insp.GetGroup(ctx, q, group); err == nil {
		have = ki.Waiting
	} else if !isNotFound(err) {
		return err
	}
	need := backlog - int(have)
	if need > 0 {
		fb.progress("  enqueuing %d tasks of group %s", need, group)
	}
	payload := make([]byte, fb.f.payload)
	batch := make([]*queue.Task, 1000)
	for i := range batch {
		batch[i] = queue.NewRawTask("a", payload, queue.Group(group))
	}
	for done := 0; done < need; done += len(batch) {
		if _, err := c.EnqueueMany(ctx, batch[:min(len(batch), need-done)], queue.In(q)); err != nil {
			return err
		}
	}
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, queue.ErrNotFound) }

// isoRun starts a worker, waits until A's tasks run, then 30 times
// enqueues B's 20 tasks under a new group and times B's first start.
func (fb *fairBench) isoRun(ctx context.Context, c *queue.Client, s isoSetup, place string) ([]time.Duration, error) {
	started := make([]chan struct{}, fairRounds)
	at := make([]atomic.Int64, fairRounds)
	for r := range started {
		started[r] = make(chan struct{})
	}
	var aStarted atomic.Int64
	aRunning := make(chan struct{})
	var once sync.Once
	h := worker.HandlerFunc(func(ctx context.Context, t *worker.Task) error {
		if t.Type == "b" {
			if r, ok := taskIndex(t.Payload); ok && r < fairRounds && at[r].CompareAndSwap(0, time.Now().UnixNano()) {
				close(started[r])
			}
		} else if aStarted.Add(1) == 2*fairConcurrency {
			once.Do(func() { close(aRunning) })
		}
		sleepCtxBench(ctx, fairHandler)
		return nil
	})
	cfg := worker.Config{Config: fb.cfg, Queues: map[string]int{s.q: 1}, Concurrency: fairConcurrency}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(fb.rdb, cfg, h)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	defer stopWorker(srv)
	if err := waitChan(ctx, aRunning, 60*time.Second, "A's tasks to start"); err != nil {
		return nil, err
	}
	waits := make([]time.Duration, 0, fairRounds)
	for r := range fairRounds {
		tasks := make([]*queue.Task, fairBTasks)
		for i := range tasks {
			tasks[i] = queue.NewRawTask("b", indexedPayload(r, fb.f.payload), queue.Group(s.bGroups[place][r]))
		}
		t0 := time.Now()
		if _, err := c.EnqueueMany(ctx, tasks, queue.In(s.q)); err != nil {
			return nil, err
		}
		if err := waitChan(ctx, started[r], 30*time.Second, fmt.Sprintf("B's first task of round %d", r+1)); err != nil {
			return nil, err
		}
		waits = append(waits, time.Unix(0, at[r].Load()).Sub(t0))
		sleepCtxBench(ctx, 50*time.Millisecond) // B's 20 tasks mostly run before the next group comes
	}
	return waits, nil
}

// waitChan waits for ch to close, at most limit.
func waitChan(ctx context.Context, ch <-chan struct{}, limit time.Duration, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		return fmt.Errorf("waited %s for %s", limit, what)
	}
}

// addWaits adds the p50, p99 and max of waits, in ms; p99 against the
// target of 50 ms.
func (fb *fairBench) addWaits(name string, waits []time.Duration) {
	slices.Sort(waits)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p99 := waits[min(len(waits)-1, int(math.Ceil(float64(len(waits))*0.99))-1)]
	fb.add(figure{Name: name + ", p50", Value: ms(waits[len(waits)/2]), Unit: "ms"})
	fb.add(figure{Name: name + ", p99", Value: ms(p99), Unit: "ms", Goal: atMost(fairWaitGoalMS, false, fmt.Sprintf("<= %d ms", fairWaitGoalMS))})
	fb.add(figure{Name: name + ", max", Value: ms(waits[len(waits)-1]), Unit: "ms"})
}

// groupsAgainstPlain processes --tasks tasks spread over 10,000 groups and
// --tasks plain tasks at concurrency 16, in turns over --rounds rounds,
// and adds each rate's median and the median of the rounds' ratios.
func (fb *fairBench) groupsAgainstPlain(ctx context.Context) error {
	var plain, grouped, ratios []float64
	for r := range fb.f.rounds {
		order := []bool{false, true}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		rates := map[bool]float64{}
		for _, k := range order {
			rate, err := fb.processRun(ctx, fmt.Sprintf("process-%d-%v", r, k), k)
			if err != nil {
				return err
			}
			rates[k] = rate
		}
		plain, grouped = append(plain, rates[false]), append(grouped, rates[true])
		ratios = append(ratios, rates[true]/rates[false])
		fb.progress("    round %d: plain %.0f, %d groups %.0f tasks/s: %.2fx", r+1, rates[false], fairGroups, rates[true], rates[true]/rates[false])
	}
	fb.add(figure{Name: "process, plain queue, concurrency 16", Value: median(plain), Unit: "tasks/s"})
	fb.add(figure{Name: fmt.Sprintf("process, tasks of %d groups, concurrency 16", fairGroups), Value: median(grouped), Unit: "tasks/s"})
	fb.add(figure{Name: fmt.Sprintf("process, %d groups / plain queue", fairGroups), Value: median(ratios), Unit: "x",
		Goal: atLeast(0.8, false, ">= 0.8")})
	return nil
}

// processRun enqueues --tasks tasks, each carrying its index and, when
// grouped, one of 10,000 groups in turn, then runs them with a no-op handler
// at concurrency 16. It returns the rate from the first start to the last
// return, once every task ran exactly once and nothing is left.
func (fb *fairBench) processRun(ctx context.Context, q string, grouped bool) (float64, error) {
	c, insp, err := fb.client()
	if err != nil {
		return 0, err
	}
	n := fb.f.tasks
	for done := 0; done < n; done += 1000 {
		batch := make([]*queue.Task, 0, 1000)
		for i := done; i < min(n, done+1000); i++ {
			var opts []queue.Option
			if grouped {
				opts = append(opts, queue.Group(fmt.Sprint("k", i%fairGroups)))
			}
			batch = append(batch, queue.NewRawTask("bench", indexedPayload(i, fb.f.payload), opts...))
		}
		if _, err := c.EnqueueMany(ctx, batch, queue.In(q)); err != nil {
			return 0, err
		}
	}
	tl := newTally(n, 0)
	cfg := worker.Config{Config: fb.cfg, Queues: map[string]int{q: 1}, Concurrency: 16}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(fb.rdb, cfg, tl)
	if err != nil {
		return 0, err
	}
	runtime.GC()
	redis0, err := redisCPU(ctx, fb.bench)
	if err != nil {
		return 0, err
	}
	self0 := selfCPU()
	if err := srv.Start(ctx); err != nil {
		return 0, err
	}
	defer stopWorker(srv)
	select {
	case <-tl.all:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	left, err := fb.waitEmpty(ctx, insp, q)
	if err != nil {
		return 0, err
	}
	redis1, err := redisCPU(ctx, fb.bench)
	if err != nil {
		return 0, err
	}
	fb.progress("    %s: Redis CPU %.1f µs/task, client CPU %.1f µs/task", q, (redis1-redis0)*1e6/float64(n),
		float64((selfCPU()-self0).Microseconds())/float64(n))
	stopWorker(srv)
	if err := tl.check(left); err != nil {
		return 0, fmt.Errorf("queue %s: no figure: %w", q, err)
	}
	fb.cleanup()
	return float64(n) / tl.elapsed().Seconds(), nil
}

// memory measures used_memory per pending task of --mem-tasks plain
// tasks, of as many grouped tasks over 10 groups, and over 10,000 groups: the
// difference of the last two is the cost of 9,990 more groups.
func (fb *fairBench) memory(ctx context.Context) error {
	n := fb.f.memTasks
	used := map[int]float64{}
	for _, ngroups := range []int{0, 10, fairGroups} {
		c, _, err := fb.client()
		if err != nil {
			return err
		}
		before, err := usedMemory(ctx, fb.rdb)
		if err != nil {
			return err
		}
		payload := make([]byte, fb.f.payload)
		for done := 0; done < n; done += 1000 {
			batch := make([]*queue.Task, 0, 1000)
			for i := done; i < min(n, done+1000); i++ {
				var opts []queue.Option
				if ngroups > 0 {
					opts = append(opts, queue.Group(fmt.Sprint("k", i%ngroups)))
				}
				batch = append(batch, queue.NewRawTask("bench", payload, opts...))
			}
			if _, err := c.EnqueueMany(ctx, batch, queue.In(fmt.Sprint("memory-", ngroups))); err != nil {
				return err
			}
		}
		after, err := usedMemory(ctx, fb.rdb)
		if err != nil {
			return err
		}
		used[ngroups] = float64(after - before)
		fb.cleanup()
	}
	plain, grouped := used[0]/float64(n), used[10]/float64(n)
	fb.add(figure{Name: fmt.Sprintf("memory per pending task, plain (%d B payload)", fb.f.payload), Value: plain, Unit: "bytes"})
	fb.add(figure{Name: fmt.Sprintf("memory per pending task, grouped, 10 groups (%d B payload)", fb.f.payload), Value: grouped, Unit: "bytes"})
	fb.add(figure{Name: "memory per pending task, grouped / plain", Value: grouped / plain, Unit: "x", Goal: atMost(1.15, false, "<= 1.15")})
	// fewer tasks than groups leave some groups with none
	many := min(n, fairGroups)
	fb.add(figure{Name: "memory per group with tasks waiting", Value: (used[fairGroups] - used[10]) / float64(many-10), Unit: "bytes"})
	return nil
}

// The weights runs: group "heavy" of weight 3 and group "light" of weight 1,
// each with a backlog; the starts counted while both have tasks waiting.
var weightRuns = []struct {
	handler time.Duration
	starts  int // counted: heavy has more than 4/3 of them waiting, light more than 1/4
}{{0, 4000}, {time.Millisecond, 2000}, {10 * time.Millisecond, 400}}

// weights measures the heavy group's share of the starts with handlers of
// 0, 1 and 10 ms, the median of --rounds runs each.
func (fb *fairBench) weights(ctx context.Context) error {
	for _, w := range weightRuns {
		var shares []float64
		for r := range fb.f.rounds {
			share, err := fb.weightRun(ctx, fmt.Sprintf("weights-%d-%d", w.handler.Milliseconds(), r), w.handler, w.starts)
			if err != nil {
				return err
			}
			shares = append(shares, share)
		}
		fb.add(figure{Name: fmt.Sprintf("weights 3:1, %d ms handlers: heavy group's share of starts", w.handler.Milliseconds()),
			Value: median(shares), Unit: "share", Goal: &goal{bound: 0.75, within: 0.05, text: "0.75 ± 0.05"}})
	}
	return nil
}

func (fb *fairBench) weightRun(ctx context.Context, q string, d time.Duration, starts int) (float64, error) {
	c, insp, err := fb.client()
	if err != nil {
		return 0, err
	}
	payload := make([]byte, fb.f.payload)
	for _, group := range []string{"light", "heavy"} {
		// the weight holds from the heavy group's first task: the queue
		// exists once the light group's tasks are in
		if group == "heavy" {
			if err := insp.SetGroupWeight(ctx, q, "heavy", 3); err != nil {
				return 0, err
			}
		}
		batch := make([]*queue.Task, 1000)
		for i := range batch {
			batch[i] = queue.NewRawTask(group, payload, queue.Group(group))
		}
		for done := 0; done < starts; done += len(batch) {
			if _, err := c.EnqueueMany(ctx, batch, queue.In(q)); err != nil {
				return 0, err
			}
		}
	}
	var n, heavy atomic.Int64
	done := make(chan struct{})
	h := worker.HandlerFunc(func(ctx context.Context, t *worker.Task) error {
		if i := n.Add(1); i <= int64(starts) {
			if t.Type == "heavy" {
				heavy.Add(1)
			}
			if i == int64(starts) {
				close(done)
			}
		}
		if d > 0 {
			sleepCtxBench(ctx, d)
		}
		return nil
	})
	cfg := worker.Config{Config: fb.cfg, Queues: map[string]int{q: 1}, Concurrency: fairConcurrency}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(fb.rdb, cfg, h)
	if err != nil {
		return 0, err
	}
	if err := srv.Start(ctx); err != nil {
		return 0, err
	}
	defer stopWorker(srv)
	if err := waitChan(ctx, done, 5*time.Minute, fmt.Sprintf("%d starts", starts)); err != nil {
		return 0, err
	}
	stopWorker(srv)
	fb.cleanup()
	return float64(heavy.Load()) / float64(starts), nil
}
