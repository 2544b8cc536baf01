package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// workloads in the order a round runs them.
var workloads = []string{"enqueue", "producers", "process", "latency", "memory", "payloads"}

// onRequest are the workloads that run only when -only names them, not
// by default: payloads, at a million ~1 KB tasks for every system, takes
// longer than the others together.
var onRequest = []string{"payloads"}

// workloadFigure is the figure a workload's failure is reported on.
// (memory reports its own, per size).
var workloadFigure = map[string]string{"enqueue": figEnqRate, "producers": figManyRate, "process": figProcRate, "latency": figLatP99}

// systemMakers build each system under test, fresh for every measurement.
var systemMakers = []func(addr string) (system, error){newShardq, newAsynq, newGocraft}

// run measures every workload for every system, o.rounds times, on one
// private redis-server, and writes the table to out.
func run(ctx context.Context, o options, out, progressW io.Writer) error {
	sz := fullSizes
	if o.quick {
		sz, o.rounds = quickSizes, 1
	}
	if o.rounds < 1 || o.rounds > 10 {
		return fmt.Errorf("-rounds %d: want 1 to 10", o.rounds)
	}
	want := map[string]bool{}
	for _, w := range strings.Split(o.only, ",") {
		if w = strings.TrimSpace(w); w != "" {
			if !slices.Contains(workloads, w) {
				return fmt.Errorf("-only: unknown workload %q (workloads: %s)", w, strings.Join(workloads, ","))
			}
			want[w] = true
		}
	}
	if len(want) == 0 {
		for _, w := range workloads {
			want[w] = !slices.Contains(onRequest, w)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	progress := progressTo(progressW)

	srv, err := redisproc.Start()
	if err != nil {
		return err
	}
	defer srv.Close()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	st := stats{rdb: admin}
	version, _ := admin.InfoMap(ctx, "server").Result()

	names, err := nameSystems(srv.Addr, systemMakers)
	if err != nil {
		return err
	}
	res := newResults(names)
	var docs docRun
	var docRes *results
	if want["payloads"] {
		if docs, err = newDocRun(srv.Addr, sz, progress); err != nil {
			return err
		}
		docRes = newResults(docs.systems())
	}
	for round := range o.rounds {
		for _, w := range workloads {
			if !want[w] {
				continue
			}
			limit, err := st.probeLimit(ctx, sz.probeCalls)
			if err != nil {
				return err
			}
			if w == "payloads" {
				docRes.add(figLimit, "redis", limit)
				if err := measurePayloadsAll(ctx, st, srv.Addr, sz, docs, round, o.rounds, docRes, progress); err != nil {
					return fmt.Errorf("round %d, %w", round+1, err)
				}
				continue
			}
			res.add(figLimit, "redis", limit)
			if w == "enqueue" {
				progress("round %d/%d: enqueue: %s, in turns of %d", round+1, o.rounds, strings.Join(names, ", "), enqueueBlock)
				if err := measureEnqueueAll(ctx, st, srv.Addr, sz, round, res); err != nil {
					return fmt.Errorf("round %d, enqueue: %w", round+1, err)
				}
				continue
			}
			if w == "producers" {
				progress("round %d/%d: producers: %s, %d at once, in turns of %d", round+1, o.rounds, strings.Join(names, ", "), manyProducers, manyBlock)
				if err := measureManyAll(ctx, st, srv.Addr, sz, round, res); err != nil {
					return fmt.Errorf("round %d, producers: %w", round+1, err)
				}
				continue
			}
			// rotate the systems' order each round, so none always runs first
			for k := range systemMakers {
				i := (k + round) % len(systemMakers)
				progress("round %d/%d: %s: %s", round+1, o.rounds, w, names[i])
				if err := measureOne(ctx, st, systemMakers[i], srv.Addr, w, sz, padded(sz.payload), figures, res); err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("round %d, %s, %s: %w", round+1, w, names[i], err)
					}
					// one system's failure (a timeout on a contended
					// machine) costs its figure of this round, not the run
					res.fail(workloadFigure[w], names[i], err)
					progress("  %s: %s failed: %v", w, names[i], err)
					if err := st.rdb.FlushAll(ctx).Err(); err != nil {
						return err
					}
				}
			}
		}
	}
	if len(res.order) > 0 {
		report(out, res, sz, o, version["Server"]["redis_version"])
	}
	if docRes != nil {
		reportPayloads(out, docRes, sz, o, docs, version["Server"]["redis_version"])
	}
	return nil
}

// nameSystems is the names of the systems makers make, in their order.
func nameSystems(addr string, makers []func(string) (system, error)) ([]string, error) {
	var names []string
	for _, mk := range makers {
		s, err := mk(addr)
		if err != nil {
			return nil, err
		}
		names = append(names, s.name())
		s.close()
	}
	return names, nil
}

// newDocRun makes the payloads workload's documents, before any
// measurement, and names its systems.
func newDocRun(addr string, sz sizes, progress func(string, ...any)) (docRun, error) {
	var d docRun
	var err error
	if d.memNames, err = nameSystems(addr, docMemoryMakers); err != nil {
		return d, err
	}
	if d.rateNames, err = nameSystems(addr, docRateMakers); err != nil {
		return d, err
	}
	progress("payloads: making %d JSON documents", docCount(sz))
	d.docs, err = newDocSet(docCount(sz), sz.process)
	return d, err
}

// measureOne runs workload w for one fresh system on an empty Redis, its
// tasks' payloads from src, and records its figures under figs' names; a
// failed check records why, not a figure.
func measureOne(ctx context.Context, st stats, mk func(string) (system, error), addr, w string, sz sizes, src payloadSource, figs figureNames, res *results) error {
	if err := st.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	sys, err := mk(addr)
	if err != nil {
		return err
	}
	defer sys.close()
	name := sys.name()
	switch w {
	case "process":
		r, err := measureProcess(ctx, st, sys, sz.process, sz.concurrency, src)
		if isCheck(err) {
			res.fail(figs.procRate, name, err)
			return nil
		}
		if err != nil {
			return err
		}
		res.add(figs.procRate, name, r.rate)
		res.add(figs.procRedis, name, r.redisUS)
		res.add(figs.procClient, name, r.clientUS)
		if figs.procCPU != "" {
			res.add(figs.procCPU, name, r.redisUS+r.clientUS)
		}
	case "latency":
		r, err := measureLatency(ctx, sys, sz)
		if isCheck(err) {
			res.fail(figLatP99, name, err)
			return nil
		}
		if err != nil {
			return err
		}
		us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
		res.add(figLatP50, name, us(r.p50))
		res.add(figLatP99, name, us(r.p99))
		res.add(figLatMax, name, us(r.max))
		res.add(figLatRate, name, r.achieved)
		res.add(figLatLate, name, float64(r.late))
	case "memory":
		for k, n := range sz.memory {
			if k > 0 {
				if err := st.rdb.FlushAll(ctx).Err(); err != nil {
					return err
				}
			}
			b, err := measureMemory(ctx, st, sys, n, src)
			if err != nil && ctx.Err() == nil {
				res.fail(figs.memory(n), name, err) // this size's figure, not the run
				continue
			}
			if err != nil {
				return err
			}
			res.add(figs.memory(n), name, b)
		}
	}
	return st.rdb.FlushAll(ctx).Err()
}

// measureEnqueueAll runs the enqueue workload for every system at once,
// in turns (measureEnqueue), on an empty Redis, and records each system's
// figures or why it has none this round.
func measureEnqueueAll(ctx context.Context, st stats, addr string, sz sizes, round int, res *results) error {
	if err := st.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	floors := newFloors(addr)
	defer func() {
		for _, f := range floors {
			f.done()
		}
	}()
	systems, turns, err := makeSystems(addr)
	defer closeSystems(systems)
	if err != nil {
		return err
	}
	for _, f := range floors {
		turns = append(turns, f)
	}
	rs, errs := measureEnqueue(ctx, st, turns, sz, round)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, s := range systems {
		if errs[i] != nil {
			// one system's failure costs its figure of this round, not the run
			res.fail(figEnqRate, s.name(), errs[i])
			continue
		}
		r := rs[i]
		res.add(figEnqRate, s.name(), r.rate)
		res.add(figEnqCmds, s.name(), r.cmdsPerTask)
		res.add(figEnqRedis, s.name(), r.redisUS)
		res.add(figEnqClient, s.name(), r.clientUS)
		res.add(figEnqCPU, s.name(), r.redisUS+r.clientUS)
	}
	for k, f := range floors {
		i := len(systems) + k
		if errs[i] != nil {
			return fmt.Errorf("the %s floor: %w", f.lib, errs[i])
		}
		res.add(figFloorRate(f.lib), "redis", rs[i].rate)
		res.add(figFloorCPU(f.lib), "redis", rs[i].redisUS+rs[i].clientUS)
	}
	return st.rdb.FlushAll(ctx).Err()
}

// measureManyAll runs the many-producer enqueue workload for every system
// at once, in turns (measureManyProducers), on an empty Redis.
func measureManyAll(ctx context.Context, st stats, addr string, sz sizes, round int, res *results) error {
	if err := st.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	systems, turns, err := makeSystems(addr)
	defer closeSystems(systems)
	if err != nil {
		return err
	}
	rs, errs := measureManyProducers(ctx, st, turns, sz, round)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, s := range systems {
		if errs[i] != nil {
			res.fail(figManyRate, s.name(), errs[i])
			continue
		}
		res.add(figManyRate, s.name(), rs[i].rate)
		res.add(figManyRedis, s.name(), rs[i].redisUS)
		res.add(figManyCPU, s.name(), rs[i].redisUS+rs[i].clientUS)
	}
	return st.rdb.FlushAll(ctx).Err()
}

// makeSystems makes every system under test on addr, and returns them
// also as enqueuers, to take turns; on an error, those made so far.
func makeSystems(addr string) ([]system, []enqueuer, error) {
	var systems []system
	var turns []enqueuer
	for _, mk := range systemMakers {
		s, err := mk(addr)
		if err != nil {
			return systems, nil, err
		}
		systems = append(systems, s)
		turns = append(turns, s)
	}
	return systems, turns, nil
}

// closeSystems closes what makeSystems made.
func closeSystems(systems []system) {
	for _, s := range systems {
		s.close()
	}
}

// machine describes where the run ran, for the report's header.
func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
