package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sizes are a run's workload sizes; -quick scales them down.
type sizes struct {
	enqueues    int           // single Enqueue calls per measurement
	manyEnqueue int           // single Enqueue calls per many-producer measurement
	process     int           // tasks per processing run
	memory      []int         // pending tasks per memory figure
	latWarm     time.Duration // open-loop warm-up, not measured
	latWindow   time.Duration // open-loop measured window
	probeCalls  int           // calls per limit probe
	payload     int           // bytes per payload
	concurrency int           // workers per processing and latency run
	batch       int           // tasks per EnqueueMany measurement (payloads)
}

var fullSizes = sizes{
	enqueues: 20_000, manyEnqueue: 64_000, process: 100_000, memory: []int{100_000, 1_000_000},
	latWarm: time.Second, latWindow: 3 * time.Second, probeCalls: 5_000, payload: 100, concurrency: 16,
	batch: 100_000,
}

var quickSizes = sizes{
	enqueues: 500, manyEnqueue: 1_280, process: 2_000, memory: []int{2_000, 5_000},
	latWarm: 200 * time.Millisecond, latWindow: 500 * time.Millisecond, probeCalls: 500, payload: 100, concurrency: 16,
	batch: 5_000,
}

// latencyRate and latencyProducers shape the open-loop latency workload.
const (
	latencyRate      = 2000
	latencyProducers = 4
)

// manyProducers is how many goroutines call single Enqueue at once in the
// "producers" workload: a service enqueueing from its request handlers
// under load. manyBlock is its turn, in calls.
const (
	manyProducers = 64
	manyBlock     = 6_400
)

// errCheck marks a run whose exactly-once or nothing-left check failed:
// its figures are not reported.
var errCheck = errors.New("check failed")

// enqueueResult is one measurement of single Enqueue from one producer.
type enqueueResult struct {
	rate        float64 // tasks/s
	redisUS     float64 // Redis CPU per task, µs
	clientUS    float64 // this process's CPU per task, µs
	cmdsPerTask float64 // Redis commands per enqueue, a script's own included
}

// enqueueBlock is how many single enqueues one system makes before the
// next takes its turn. A shared machine's speed drifts within seconds, so
// the systems take short turns, in an order rotated every block, and each
// meets the same spells; the INFO reads around a turn stay out of its
// time and client CPU (snap, snapEnd).
const enqueueBlock = 500

// measureEnqueue measures single enqueues from one producer for every
// system (and floor) in turns of enqueueBlock calls, sz.enqueues calls
// each, all on one Redis (each keeps its own keys). A system whose call fails
// drops out with its error; the others go on.
func measureEnqueue(ctx context.Context, st stats, systems []enqueuer, sz sizes, round int) ([]enqueueResult, []error) {
	return measureTurns(ctx, st, systems, sz.enqueues, enqueueBlock, 1, sz.payload, round)
}

// measureManyProducers is measureEnqueue with manyProducers goroutines
// calling at once, sz.manyEnqueue calls per system in turns of manyBlock.
func measureManyProducers(ctx context.Context, st stats, systems []enqueuer, sz sizes, round int) ([]enqueueResult, []error) {
	return measureTurns(ctx, st, systems, sz.manyEnqueue, manyBlock, manyProducers, sz.payload, round)
}

// enqueueN makes n single enqueues on sys from producers goroutines and
// returns the first error.
func enqueueN(ctx context.Context, sys enqueuer, payload []byte, n, producers int) error {
	if producers == 1 {
		for range n {
			if err := sys.enqueue(ctx, payload); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += producers {
				if errs[p] = sys.enqueue(ctx, payload); errs[p] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measureTurns measures total single enqueues per system, in turns of
// block calls from producers goroutines, the systems' order rotated every
// block.
func measureTurns(ctx context.Context, st stats, systems []enqueuer, total, block, producers, size, round int) ([]enqueueResult, []error) {
	payload := payloadFor(0, size)
	errs := make([]error, len(systems))
	for i, sys := range systems {
		// warm up: connections dialled, scripts loaded, registries written
		for range 200 {
			if err := sys.enqueue(ctx, payload); err != nil {
				errs[i] = err
				break
			}
		}
	}
	return takeTurns(ctx, st, errs, total, block, round, func(i, _, n int) error {
		return enqueueN(ctx, systems[i], payload, n, producers)
	})
}

// takeTurns measures total tasks per system, made by do(i, from, n) (n
// tasks of system i, from its task from on) in turns of block tasks, the
// systems' order rotated every block. A system with an error in errs
// (its warm-up's) takes no turn; one whose turn fails drops out with its
// error; the others go on.
func takeTurns(ctx context.Context, st stats, errs []error, total, block, round int, do func(i, from, n int) error) ([]enqueueResult, []error) {
	k := len(errs)
	res := make([]enqueueResult, k)
	took := make([]time.Duration, k)
	redisCPU := make([]time.Duration, k)
	selfCPU := make([]time.Duration, k)
	calls := make([]int64, k)
	runtime.GC() // the warm-up's garbage is no turn's
	blocks := (total + block - 1) / block
	for b := range blocks {
		n := min(block, total-b*block)
		for j := range k {
			i := (j + b + round) % k
			if errs[i] != nil {
				continue
			}
			a, err := st.snap(ctx)
			if err != nil {
				errs[i] = err
				continue
			}
			err = do(i, b*block, n)
			z, serr := st.snapEnd(ctx)
			if err = errors.Join(err, serr); err != nil {
				errs[i] = err
				continue
			}
			took[i] += z.at.Sub(a.at)
			redisCPU[i] += z.redisCPU - a.redisCPU
			selfCPU[i] += z.selfCPU - a.selfCPU
			calls[i] += z.calls - a.calls // INFO itself is not counted
		}
	}
	n := float64(total)
	for i := range k {
		if errs[i] != nil {
			continue
		}
		res[i] = enqueueResult{
			rate:        n / took[i].Seconds(),
			redisUS:     float64(redisCPU[i].Microseconds()) / n,
			clientUS:    float64(selfCPU[i].Microseconds()) / n,
			cmdsPerTask: float64(calls[i]) / n,
		}
	}
	return res, errs
}

// processResult is one processing run at a fixed concurrency.
type processResult struct {
	rate     float64 // tasks/s, first handler start to last return
	redisUS  float64
	clientUS float64
}

// measureProcess fills n tasks of src's payloads, then runs them at
// concurrency conc, checking each ran once with the payload it was given.
func measureProcess(ctx context.Context, st stats, sys system, n, conc int, src payloadSource) (processResult, error) {
	if err := fillChunked(ctx, sys, 0, n, src); err != nil {
		return processResult{}, err
	}
	counts := make([]atomic.Int32, n)
	var first, last, done, bad atomic.Int64
	all := make(chan struct{})
	h := func(p []byte) {
		first.CompareAndSwap(0, time.Now().UnixNano())
		i := src.index(p)
		if i < 0 || i >= n {
			bad.Add(1)
		} else {
			counts[i].Add(1)
		}
		if done.Add(1) == int64(n) {
			close(all)
		}
		for t := time.Now().UnixNano(); ; {
			l := last.Load()
			if t <= l || last.CompareAndSwap(l, t) {
				break
			}
		}
	}
	runtime.GC() // the fill's garbage is not the worker's
	a, err := st.snap(ctx)
	if err != nil {
		return processResult{}, err
	}
	stop, err := sys.start(ctx, conc, h)
	if err != nil {
		return processResult{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		stop()
		return processResult{}, ctx.Err()
	case <-time.After(5 * time.Minute):
		stop()
		return processResult{}, fmt.Errorf("%w: %d of %d tasks ran within 5 minutes", errCheck, done.Load(), n)
	}
	// the last acks: nothing may be left pending, active, retrying or dead
	werr := waitFor(ctx, 30*time.Second, func() (bool, error) {
		left, err := sys.leftover(ctx)
		return left == 0, err
	})
	b, err := st.snapEnd(ctx)
	stop()
	if err != nil {
		return processResult{}, err
	}
	if werr != nil {
		left, _ := sys.leftover(ctx)
		return processResult{}, fmt.Errorf("%w: %d tasks left in the queue after the run: %v", errCheck, left, werr)
	}
	// after the stop, so a late duplicate is seen too
	if k := bad.Load(); k > 0 {
		return processResult{}, fmt.Errorf("%w: %d handler calls with an unknown payload", errCheck, k)
	}
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			return processResult{}, fmt.Errorf("%w: task %d ran %d times", errCheck, i, c)
		}
	}
	span := time.Duration(last.Load() - first.Load())
	return processResult{
		rate:     float64(n) / span.Seconds(),
		redisUS:  float64((b.redisCPU - a.redisCPU).Microseconds()) / float64(n),
		clientUS: float64((b.selfCPU - a.selfCPU).Microseconds()) / float64(n),
	}, nil
}

// fillChunked enqueues tasks from..to-1 in chunks, so a million payloads
// made on demand never sit in memory at once.
func fillChunked(ctx context.Context, sys system, from, to int, src payloadSource) error {
	const chunk = 20_000
	for i := from; i < to; i += chunk {
		if err := sys.fill(ctx, src.payloads(i, min(to, i+chunk))); err != nil {
			return err
		}
	}
	return nil
}

// measureMemory is Redis's used_memory delta of n pending tasks of src's
// payloads, per task.
func measureMemory(ctx context.Context, st stats, sys system, n int, src payloadSource) (float64, error) {
	before, err := st.usedMemory(ctx)
	if err != nil {
		return 0, err
	}
	if err := fillChunked(ctx, sys, 0, n, src); err != nil {
		return 0, err
	}
	after, err := st.usedMemory(ctx)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// latencyResult is one open-loop run: enqueue to handler start, measured
// from each task's planned send time, so a late send counts against it.
type latencyResult struct {
	p50, p99, max time.Duration
	achieved      float64 // tasks/s sent in the measured window
	late          int     // beats sent more than one interval after their plan
	sent          int     // tasks in the measured window
}

func measureLatency(ctx context.Context, sys system, sz sizes) (latencyResult, error) {
	interval := time.Second / latencyRate
	total := int((sz.latWarm + sz.latWindow) / interval)
	warm := int(sz.latWarm / interval)
	planned := make([]time.Time, total)
	lats := make([]time.Duration, total)
	seen := make([]atomic.Bool, total)
	var got atomic.Int64
	all := make(chan struct{})
	stop, err := sys.start(ctx, sz.concurrency, func(p []byte) {
		now := time.Now()
		i := indexOf(p)
		if i < 0 || i >= total || seen[i].Swap(true) {
			return
		}
		lats[i] = now.Sub(planned[i])
		if got.Add(1) == int64(total) {
			close(all)
		}
	})
	if err != nil {
		return latencyResult{}, err
	}
	defer stop()
	time.Sleep(200 * time.Millisecond) // the workers are polling
	t0 := time.Now().Add(10 * time.Millisecond)
	for i := range planned {
		planned[i] = t0.Add(time.Duration(i) * interval)
	}
	var late atomic.Int64
	var sentAt [latencyProducers]time.Time
	var wg sync.WaitGroup
	var failed atomic.Value
	for p := range latencyProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < total; i += latencyProducers {
				if d := time.Until(planned[i]); d > 0 {
					time.Sleep(d)
				} else if -d > interval && i >= warm {
					late.Add(1)
				}
				if err := sys.enqueue(ctx, payloadFor(i, sz.payload)); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				sentAt[p] = time.Now()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return latencyResult{}, err
	}
	lastSent := slices.MaxFunc(sentAt[:], time.Time.Compare)
	select {
	case <-all:
	case <-ctx.Done():
		return latencyResult{}, ctx.Err()
	case <-time.After(30 * time.Second):
		return latencyResult{}, fmt.Errorf("%w: %d of %d latency tasks ran within 30 s", errCheck, got.Load(), total)
	}
	m := slices.Clone(lats[warm:])
	slices.Sort(m)
	return latencyResult{
		p50: m[len(m)/2], p99: m[len(m)*99/100], max: m[len(m)-1],
		achieved: float64(len(m)) / lastSent.Sub(planned[warm]).Seconds(),
		late:     int(late.Load()), sent: len(m),
	}, nil
}
