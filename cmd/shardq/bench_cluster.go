package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// bench --cluster runs the processing benchmark on private Redis Clusters
// of 1 and of 3 masters, round after round, so both see the same machine
// at nearly the same time. Its projecting figure is Redis CPU per task per
// master: wall-clock rates on a small machine, where the masters share
// the cores with each other and with the client, understate scaling.

// The cluster run's fixed shape: the same for every setup, so only the
// number of masters differs.
const (
	defaultClusterPartitions = 6
	clusterConcurrency       = 16
	clusterQueueTries        = 1000
	// clusterProducers is how many goroutines fill the queue with single
	// Enqueue calls, the enqueue side measured: a service enqueueing from
	// its request handlers under load.
	clusterProducers = 64
)

// clusterSetups are the numbers of masters compared, the baseline first.
var clusterSetups = []int{1, 3}

// clusterSetup is one private cluster and its runs.
type clusterSetup struct {
	masters int
	cl      *redisproc.Cluster
	rdb     *redis.ClusterClient
	runs    []clusterRun
}

// label names the setup in the output: "1 master", "3 masters".
func (s *clusterSetup) label() string {
	if s.masters == 1 {
		return "1 master"
	}
	return fmt.Sprintf("%d masters", s.masters)
}

// clusterRun is what one run on one setup measured: the processing and,
// in enq, the enqueue side (the fill), with the same fields.
type clusterRun struct {
	tasks     int
	rate      float64   // tasks/s, first handler start to last return
	redisCPU  []float64 // CPU seconds used by each master (setup's node order)
	commands  float64   // commands all masters processed
	reads     float64   // socket reads all masters processed: requests, batched
	served    []int64   // tasks each master's partitions delivered (or took)
	clientCPU float64   // this process's CPU seconds
	enq       *clusterRun
}

// sideOf returns r's processing side, or its enqueue side when enq is set.
func sideOf(r clusterRun, enq bool) clusterRun {
	if enq {
		return *r.enq
	}
	return r
}

// redisUS is the Redis CPU per task summed over all masters, µs.
func (r clusterRun) redisUS() float64 {
	sum := 0.0
	for _, c := range r.redisCPU {
		sum += c
	}
	return sum * 1e6 / float64(r.tasks)
}

// masterUS is master i's CPU per task it served, µs (0 when it served none).
func (r clusterRun) masterUS(i int) float64 {
	if r.served[i] == 0 {
		return 0
	}
	return r.redisCPU[i] * 1e6 / float64(r.served[i])
}

// clusterBench is one bench --cluster invocation.
type clusterBench struct {
	m      *Main
	f      benchFlags
	prefix string
	setups []*clusterSetup
}

// runCluster starts the clusters, runs the rounds and reports; every
// cluster it started is stopped before it returns.
func (c *benchCommand) runCluster(ctx context.Context, m *Main, f benchFlags) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	cb := &clusterBench{m: m, f: f, prefix: "shardq-bench-" + wire.Nonce()}
	defer cb.close()
	for _, n := range clusterSetups {
		if err := cb.start(ctx, n); err != nil {
			return err
		}
	}
	for round := range f.rounds {
		// Alternate the order, so neither setup always runs second, on
		// a machine a previous run has just warmed or loaded.
		order := slices.Clone(cb.setups)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			r, err := cb.runOnce(ctx, s, round)
			if err != nil {
				if dl, _ := ctx.Deadline(); !time.Now().Before(dl) {
					return fmt.Errorf("cluster, %s, round %d: stopped by --timeout %s: %w", s.label(), round+1, f.timeout, context.DeadlineExceeded)
				}
				return fmt.Errorf("cluster, %s, round %d: %w", s.label(), round+1, err)
			}
			s.runs = append(s.runs, r)
			cb.progress("  round %d, %s: %.0f tasks/s, Redis CPU %.1f µs/task (all masters), client CPU %.1f µs/task",
				round+1, s.label(), r.rate, r.redisUS(), r.clientCPU*1e6/float64(r.tasks))
		}
	}
	cb.report(m.Stdout)
	return nil
}

// start starts a private cluster of n masters and a client for it made as
// users make theirs (queue.NewRedisClient with a redis+cluster:// URL).
func (cb *clusterBench) start(ctx context.Context, n int) error {
	cl, err := redisproc.StartCluster(n)
	if err != nil {
		return fmt.Errorf("start a private %d-master Redis Cluster: %w", n, err)
	}
	s := &clusterSetup{masters: n, cl: cl}
	cb.setups = append(cb.setups, s)
	addrs := cl.Addrs()
	url := "redis+cluster://" + addrs[0]
	if len(addrs) > 1 {
		url += "?addr=" + strings.Join(addrs[1:], "&addr=")
	}
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		return fmt.Errorf("client for the %d-master cluster %q: %w", n, url, err)
	}
	s.rdb = rdb.(*redis.ClusterClient)
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("the %d-master cluster at %s: %w", n, url, err)
	}
	cb.progress("started a private %s Redis Cluster at %s (stopped on exit)", s.label(), strings.Join(addrs, ", "))
	return nil
}

// close closes the clients and stops every cluster.
func (cb *clusterBench) close() {
	for _, s := range cb.setups {
		if s.rdb != nil {
			_ = s.rdb.Close()
		}
		_ = s.cl.Close()
	}
}

func (cb *clusterBench) progress(format string, args ...any) {
	fmt.Fprintf(cb.m.Stderr, format+"\n", args...)
}

// nodeIndex is the index in s.cl.Nodes of the node at addr.
func (s *clusterSetup) nodeIndex(addr string) (int, error) {
	for i, n := range s.cl.Nodes {
		if n.Addr == addr {
			return i, nil
		}
	}
	return 0, fmt.Errorf("master %s is not one of the %d nodes started", addr, len(s.cl.Nodes))
}

// spreadQueue returns a queue name for round whose partitions fall evenly
// over s's masters (each holds --partitions/masters, give or take
// one), and the node index holding each partition. Which master holds a
// partition follows from its name, so an unlucky name would load one
// master with more than its share and measure that instead of scaling.
func (cb *clusterBench) spreadQueue(ctx context.Context, s *clusterSetup, round int) (string, []int, error) {
	for try := range clusterQueueTries {
		q := fmt.Sprintf("cluster-r%d-%d", round, try)
		owner := make([]int, cb.f.partitions)
		per := make([]int, s.masters)
		for p := range cb.f.partitions {
			node, err := s.rdb.MasterForKey(ctx, keys.For(cb.prefix, q, p).T)
			if err != nil {
				return "", nil, fmt.Errorf("master of partition %d of queue %q: %w", p, q, err)
			}
			if owner[p], err = s.nodeIndex(node.Options().Addr); err != nil {
				return "", nil, err
			}
			per[owner[p]]++
		}
		if slices.Max(per)-slices.Min(per) <= 1 {
			return q, owner, nil
		}
	}
	return "", nil, fmt.Errorf("no queue name of %d tried spreads %d partitions evenly over %d masters", clusterQueueTries, cb.f.partitions, s.masters)
}

// masterCounters is what a master has done so far, from INFO.
type masterCounters struct {
	cpu      float64 // used_cpu_user + used_cpu_sys, seconds
	commands float64 // total_commands_processed
	reads    float64 // total_reads_processed: one per batch of requests read
}

// mastersCounters reads each master's counters, in node order, through
// the cluster client's own view of the masters.
func (s *clusterSetup) mastersCounters(ctx context.Context) ([]masterCounters, error) {
	out := make([]masterCounters, len(s.cl.Nodes))
	seen := make([]bool, len(s.cl.Nodes))
	var mu sync.Mutex
	err := s.rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		i, err := s.nodeIndex(node.Options().Addr)
		if err != nil {
			return err
		}
		var c masterCounters
		for _, f := range []struct {
			section, field string
			into           *float64
		}{
			{"cpu", "used_cpu_user", &c.cpu},
			{"cpu", "used_cpu_sys", nil},
			{"stats", "total_commands_processed", &c.commands},
			{"stats", "total_reads_processed", &c.reads},
		} {
			v, err := infoFloat(ctx, node, f.section, f.field)
			if err != nil {
				return fmt.Errorf("INFO %s of %s, %s: %w", f.section, node.Options().Addr, f.field, err)
			}
			if f.into == nil {
				c.cpu += v
			} else {
				*f.into += v
			}
		}
		mu.Lock()
		out[i], seen[i] = c, true
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("node %s was not among the cluster's masters", s.cl.Nodes[i].Addr)
		}
	}
	return out, nil
}

// runOnce is processRun on a cluster: pre-fill a queue of
// --partitions partitions spread over the masters, run it dry with a
// no-op handler, and read every master's CPU before and after. The run
// counts only when every task ran exactly once and nothing is left.
func (cb *clusterBench) runOnce(ctx context.Context, s *clusterSetup, round int) (clusterRun, error) {
	q, owner, err := cb.spreadQueue(ctx, s, round)
	if err != nil {
		return clusterRun{}, err
	}
	// A bench of its own, for fillIndexed and waitEmpty.
	b := &bench{m: cb.m, f: cb.f, rdb: s.rdb, cfg: queue.Config{Prefix: cb.prefix, Partitions: map[string]int{q: cb.f.partitions}}}
	c, insp, err := b.client()
	if err != nil {
		return clusterRun{}, err
	}
	n := cb.f.tasks
	enq, err := cb.fillProducers(ctx, s, c, q, owner, n)
	if err != nil {
		return clusterRun{}, fmt.Errorf("fill: %w", err)
	}
	tl := newTally(n, cb.f.partitions)
	cfg := worker.Config{Config: b.cfg, Queues: map[string]int{q: 1}, Concurrency: clusterConcurrency}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(s.rdb, cfg, tl)
	if err != nil {
		return clusterRun{}, err
	}
	runtime.GC() // the fill's garbage is not the worker's CPU
	c0, err := s.mastersCounters(ctx)
	if err != nil {
		return clusterRun{}, err
	}
	self0 := selfCPU()
	if err := srv.Start(ctx); err != nil {
		return clusterRun{}, err
	}
	defer stopWorker(srv)
	select {
	case <-tl.all:
	case <-ctx.Done():
		return clusterRun{}, ctx.Err()
	}
	left, err := b.waitEmpty(ctx, insp, q)
	if err != nil {
		return clusterRun{}, err
	}
	self := selfCPU() - self0
	c1, err := s.mastersCounters(ctx)
	if err != nil {
		return clusterRun{}, err
	}
	stopWorker(srv)
	// checked after the stop, so a late second run of a task counts too
	if err := tl.check(left); err != nil {
		return clusterRun{}, fmt.Errorf("no figure: %w", err)
	}
	r := s.newRun(n, tl.elapsed(), self, c0, c1, owner, tl.perPart)
	r.enq = &enq
	return r, nil
}

// newRun is what n tasks in took measured on s: the masters' counters
// before and after, this process's CPU, and the tasks per partition
// (owner: the node index holding each).
func (s *clusterSetup) newRun(n int, took, self time.Duration, c0, c1 []masterCounters, owner []int, perPart []atomic.Int64) clusterRun {
	r := clusterRun{
		tasks:     n,
		rate:      float64(n) / took.Seconds(),
		redisCPU:  make([]float64, s.masters),
		served:    make([]int64, s.masters),
		clientCPU: self.Seconds(),
	}
	for i := range r.redisCPU {
		r.redisCPU[i] = c1[i].cpu - c0[i].cpu
		r.commands += c1[i].commands - c0[i].commands
		r.reads += c1[i].reads - c0[i].reads
	}
	for p, node := range owner {
		r.served[node] += perPart[p].Load()
	}
	return r
}

// fillProducers enqueues tasks 0..n-1 (indexedPayload) into q from
// clusterProducers goroutines, each making single Enqueue calls, and
// measures it as runOnce measures the processing: the enqueue side. A
// failed call fails the fill.
func (cb *clusterBench) fillProducers(ctx context.Context, s *clusterSetup, c *queue.Client, q string, owner []int, n int) (clusterRun, error) {
	runtime.GC()
	c0, err := s.mastersCounters(ctx)
	if err != nil {
		return clusterRun{}, err
	}
	self0, start := selfCPU(), time.Now()
	perPart := make([]atomic.Int64, cb.f.partitions)
	errs := make([]error, clusterProducers)
	var wg sync.WaitGroup
	for g := range clusterProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += clusterProducers {
				info, err := c.Enqueue(ctx, queue.NewRawTask("bench", indexedPayload(i, cb.f.payload)), queue.In(q))
				if err != nil {
					errs[g] = fmt.Errorf("task %d: %w", i, err)
					return
				}
				perPart[info.Partition].Add(1)
			}
		}()
	}
	wg.Wait()
	took, self := time.Since(start), selfCPU()-self0
	if err := errors.Join(errs...); err != nil {
		return clusterRun{}, err
	}
	c1, err := s.mastersCounters(ctx)
	if err != nil {
		return clusterRun{}, err
	}
	return s.newRun(n, took, self, c0, c1, owner, perPart), nil
}

// clusterFigure is one BENCH line of the cluster run.
type clusterFigure struct {
	Name  string  `json:"figure"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Min   float64 `json:"min,omitempty"`
	Max   float64 `json:"max,omitempty"`
	// Rounds is how many rounds the median is of.
	Rounds int `json:"rounds"`
}

// medianRange returns the median, min and max of vs.
func medianRange(vs []float64) (med, lo, hi float64) {
	return median(vs), slices.Min(vs), slices.Max(vs)
}

// collect returns f over every run of s.
func (s *clusterSetup) collect(f func(clusterRun) float64) []float64 {
	out := make([]float64, len(s.runs))
	for i, r := range s.runs {
		out[i] = f(r)
	}
	return out
}

// report prints, for the processing and then for the enqueue side, the
// table per setup, the ratio of the rates within each round, Redis CPU per
// task on each master with the rate one core of it would allow at that
// cost, and how the tasks spread; then one JSON line per figure.
func (cb *clusterBench) report(w io.Writer) {
	var figs []clusterFigure
	add := func(name, unit string, vs []float64) {
		med, lo, hi := medianRange(vs)
		figs = append(figs, clusterFigure{Name: name, Value: med, Unit: unit, Min: lo, Max: hi, Rounds: len(vs)})
	}
	fmt.Fprintf(w, "\nRedis Cluster, processing: %d tasks per run, no-op handler, concurrency %d, %d partitions spread evenly over the masters, %d round(s), setups interleaved; GOMAXPROCS %d\n\n",
		cb.f.tasks, clusterConcurrency, cb.f.partitions, cb.f.rounds, runtime.GOMAXPROCS(0))
	cb.reportSide(w, false, add, &figs)
	fmt.Fprintf(w, "\nRedis Cluster, enqueue side: the same %d tasks per run enqueued before it by single Enqueue calls from %d goroutines at once (concurrent calls coalesce)\n\n",
		cb.f.tasks, clusterProducers)
	cb.reportSide(w, true, add, &figs)
	fmt.Fprintln(w)
	for _, f := range figs {
		line, _ := json.Marshal(f)
		fmt.Fprintf(w, "BENCH %s\n", line)
	}
}

// reportSide prints report's tables for one side: the processing, or the
// enqueue side (enq), whose figures' names say "enqueue".
func (cb *clusterBench) reportSide(w io.Writer, enq bool, add func(name, unit string, vs []float64), figs *[]clusterFigure) {
	what, per := "process, no-op handler", "task"
	if enq {
		what, per = fmt.Sprintf("enqueue, %d producers", clusterProducers), "enqueue"
	}
	collect := func(s *clusterSetup, f func(clusterRun) float64) []float64 {
		return s.collect(func(r clusterRun) float64 { return f(sideOf(r, enq)) })
	}
	// Commands and socket reads per task, summed over the masters, tell a
	// command's own cost from what each round trip costs Redis.
	fmt.Fprintf(w, "%-10s %8s %-15s %21s %22s %17s %14s\n", "setup", "tasks/s", "(min-max)", "Redis CPU µs/"+per, "client CPU µs/"+per, "commands/"+per, "reads/"+per)
	for _, s := range cb.setups {
		rates := collect(s, func(r clusterRun) float64 { return r.rate })
		redisUS := collect(s, clusterRun.redisUS)
		clientUS := collect(s, func(r clusterRun) float64 { return r.clientCPU * 1e6 / float64(r.tasks) })
		med, lo, hi := medianRange(rates)
		cmds := collect(s, func(r clusterRun) float64 { return r.commands / float64(r.tasks) })
		reads := collect(s, func(r clusterRun) float64 { return r.reads / float64(r.tasks) })
		fmt.Fprintf(w, "%-10s %8.0f %-15s %21.1f %22.1f %17.3f %14.3f\n", s.label(), med, fmt.Sprintf("(%.0f-%.0f)", lo, hi), median(redisUS), median(clientUS), median(cmds), median(reads))
		add("cluster "+s.label()+": "+what, "tasks/s", rates)
		add("cluster "+s.label()+": Redis CPU per "+per+", all masters", "µs", redisUS)
		add("cluster "+s.label()+": client CPU per "+per, "µs", clientUS)
		add("cluster "+s.label()+": Redis commands per "+per+", all masters", "commands", cmds)
		add("cluster "+s.label()+": Redis socket reads per "+per+", all masters", "reads", reads)
	}
	base, top := cb.setups[0], cb.setups[len(cb.setups)-1]
	ratios := make([]float64, len(base.runs))
	for i := range ratios {
		ratios[i] = sideOf(top.runs[i], enq).rate / sideOf(base.runs[i], enq).rate
	}
	med, lo, hi := medianRange(ratios)
	ratioName := fmt.Sprintf("cluster %s / %s: tasks/s ratio", top.label(), base.label())
	if enq {
		ratioName = fmt.Sprintf("cluster %s / %s: enqueue tasks/s ratio", top.label(), base.label())
	}
	fmt.Fprintf(w, "\nratio %s / %s: %.2fx tasks/s (median of %d rounds' ratios, %.2f-%.2f)\n", top.label(), base.label(), med, len(ratios), lo, hi)
	add(ratioName, "x", ratios)

	if enq {
		fmt.Fprintf(w, "\nRedis CPU per enqueue per master: each master's CPU (used_cpu_user+used_cpu_sys) over the tasks its partitions took; median of rounds.\n")
	} else {
		fmt.Fprintf(w, "\nRedis CPU per task per master: each master's CPU (used_cpu_user+used_cpu_sys) over the tasks its partitions served; median of rounds.\n")
	}
	fmt.Fprintf(w, "The ceiling is 1 s / that cost: the rate one fully busy master core would allow.\n")
	fmt.Fprintf(w, "%-10s %-24s %12s %12s %18s\n", "setup", "master", "tasks", "µs/"+per, "ceiling tasks/s")
	for _, s := range cb.setups {
		var total int64
		for _, r := range s.runs {
			for _, n := range sideOf(r, enq).served {
				total += n
			}
		}
		for i, node := range s.cl.Nodes {
			var served int64
			for _, r := range s.runs {
				served += sideOf(r, enq).served[i]
			}
			us := collect(s, func(r clusterRun) float64 { return r.masterUS(i) })
			share := 100 * float64(served) / float64(total)
			ceiling := 0.0
			if m := median(us); m > 0 {
				ceiling = 1e6 / m
			}
			fmt.Fprintf(w, "%-10s %-24s %11.1f%% %12.1f %18.0f\n", s.label(), fmt.Sprintf("%d (%s)", i+1, node.Addr), share, median(us), ceiling)
			cost, took := fmt.Sprintf("cluster %s: Redis CPU per task, master %d", s.label(), i+1), fmt.Sprintf("cluster %s: tasks served, master %d", s.label(), i+1)
			if enq {
				cost, took = fmt.Sprintf("cluster %s: Redis CPU per enqueue, master %d", s.label(), i+1), fmt.Sprintf("cluster %s: tasks enqueued, master %d", s.label(), i+1)
			}
			add(cost, "µs", us)
			*figs = append(*figs, clusterFigure{Name: took, Value: share, Unit: "%", Rounds: len(s.runs)})
		}
	}
}

// maxBenchPartitions bounds --partitions: queue.Config's own bound.
const maxBenchPartitions = 1024
