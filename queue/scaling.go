package queue

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// Scaling is the autoscaling figure of one queue: how many worker
// processes it needs, and the inputs that figure came from.
//
// The figure is Little's law plus a drain term. Handlers needed at once:
//
//	needed = ArrivalRate × MeanHandlerTime + Backlog × MeanHandlerTime / DrainTime
//
// (keep up with what arrives, and clear what waits within DrainTime), and
//
//	DesiredWorkers = ceil(needed / WorkerConcurrency)
//
// at least 1 while tasks wait or run, at most MaxWorkers when set. Before
// any worker has reported a handler time the mean is unknown, and the
// figure is 1 while there is work: one worker to learn it from.
type Scaling struct {
	Queue string `json:"queue"`
	// DesiredWorkers is the figure: worker processes the queue needs.
	DesiredWorkers int `json:"desiredWorkers"`
	// NeededConcurrency is the handlers needed at once (before dividing by
	// WorkerConcurrency).
	NeededConcurrency float64 `json:"neededConcurrency"`

	// Backlog is the tasks ready to run: pending, and those the live
	// workers leased ahead of their free slots and hold (prefetch), as of
	// their last heartbeats.
	Backlog int64 `json:"backlog"`
	// Running is the active tasks less those held ahead.
	Running int64 `json:"running"`
	// ArrivalRate is the tasks enqueued per second over the last
	// RateWindow; 0 until a second sample exists (the first read starts
	// the samples).
	ArrivalRate float64       `json:"arrivalRate"`
	RateWindow  time.Duration `json:"-"`
	// MeanHandlerTime is the recent mean time a handler of the queue ran,
	// over the live workers that ran any (weighted by how many each ran);
	// 0 when unknown.
	MeanHandlerTime time.Duration `json:"-"`
	// Workers is how many live workers serve the queue now, and
	// WorkerConcurrency the handler slots of each (their mean, else
	// ScalingQuery.Concurrency).
	Workers           int           `json:"workers"`
	WorkerConcurrency int           `json:"workerConcurrency"`
	DrainTime         time.Duration `json:"-"`
	MaxWorkers        int           `json:"maxWorkers,omitempty"`

	// For JSON readers: the durations in seconds.
	MeanHandlerSeconds float64 `json:"meanHandlerSeconds"`
	DrainSeconds       float64 `json:"drainSeconds"`
	RateWindowSeconds  float64 `json:"rateWindowSeconds"`
}

// ScalingQuery names a queue and the inputs of its autoscaling figure;
// a zero input takes its default.
type ScalingQuery struct {
	Queue string
	// DrainTime is how soon the backlog should be cleared (T in the
	// formula). Defaults to a minute.
	DrainTime time.Duration
	// RateWindow is how long the arrival rate is measured over. Defaults
	// to a minute; at least a second.
	RateWindow time.Duration
	// Concurrency is the handler slots of one worker (C in the formula)
	// when no live worker serves the queue to read it from. Defaults to
	// 10, the worker's default Concurrency.
	Concurrency int
	// MaxWorkers caps the figure; 0 leaves it uncapped.
	MaxWorkers int
}

// scalingOptions are a ScalingQuery's inputs, defaults filled in.
type scalingOptions struct {
	drain       time.Duration
	window      time.Duration
	concurrency int
	max         int
}

// defaultDrainTime is how soon Scaling plans to clear a backlog unless
// ScalingQuery.DrainTime says otherwise.
const defaultDrainTime = time.Minute

// Scaling returns queue's autoscaling figure (see Scaling) in two round
// trips: the registry, then one pipeline with each partition's counts and
// arrival-rate sample and the workers' heartbeats and statuses. The rate
// samples are kept in Redis (a short list per partition), so every reader,
// in any process, measures over the same window.
func (i *Inspector) Scaling(ctx context.Context, q ScalingQuery) (*Scaling, error) {
	queue := q.Queue
	o := scalingOptions{drain: cmp.Or(q.DrainTime, defaultDrainTime), window: cmp.Or(q.RateWindow, time.Minute),
		concurrency: cmp.Or(q.Concurrency, 10), max: q.MaxWorkers}
	if o.drain <= 0 || o.window < time.Second || o.concurrency < 1 || o.max < 0 {
		return nil, fmt.Errorf("%w: scaling drain %v (want > 0), window %v (want >= 1s), concurrency %d (want >= 1), max workers %d (want >= 0)",
			errInvalidOption, o.drain, o.window, o.concurrency, o.max)
	}
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return nil, err
	}
	counts := make([]*redis.Cmd, n)
	rates := make([]*redis.Cmd, n)
	var beats *redis.ZSliceCmd
	var statuses *redis.MapStringStringCmd
	err = rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part := range n {
				k := keys.For(i.cfg.Prefix, queue, part)
				counts[part] = p.Run(ctx, script.Counts, countKeys(k), countArgs(k)...)
				rates[part] = p.Run(ctx, script.RateSample, []string{keys.RankKey(k.Feed()), k.RateSamples()},
					"", o.window.Milliseconds())
			}
			beats = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: keys.Workers(i.cfg.Prefix),
				Start: 0, Stop: maxWorkers - 1, Rev: true})
			statuses = p.HGetAll(ctx, keys.WorkerStatus(i.cfg.Prefix))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("scaling of queue %q: %w", queue, err)
	}
	info := &QueueInfo{Queue: queue}
	now := time.Now()
	for _, cmd := range counts {
		if err := info.add(cmd, now); err != nil {
			return nil, err
		}
	}
	sc := &Scaling{Queue: queue, Backlog: info.Pending, Running: info.Active, RateWindow: o.window,
		DrainTime: o.drain, MaxWorkers: o.max, WorkerConcurrency: o.concurrency}
	for _, cmd := range rates {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) < 4 {
			return nil, fmt.Errorf("scaling of queue %q: unexpected rate sample %v: %w", queue, v, err)
		}
		if span := v[0] - v[2]; span > 0 {
			sc.ArrivalRate += float64(v[1]-v[3]) / (float64(span) / 1000)
		}
	}
	sc.readWorkers(queue, beats.Val(), statuses.Val())
	sc.compute()
	return sc, nil
}

// readWorkers takes the live workers serving queue, their concurrency and
// their handler times from the statuses they publish.
func (sc *Scaling) readWorkers(queue string, beats []redis.Z, statuses map[string]string) {
	var slots int
	var done int64
	var weighted float64
	for _, z := range beats {
		b, ok := statuses[fmt.Sprint(z.Member)]
		if !ok || !alive(z) {
			continue
		}
		st, err := wire.DecodeWorkerStatus([]byte(b))
		if err != nil {
			continue
		}
		if _, serves := st.Queues[queue]; !serves {
			continue
		}
		sc.Workers++
		slots += st.Concurrency
		// tasks a worker leased ahead are active but wait: backlog
		ahead := min(int64(st.Work[queue].Ahead), sc.Running)
		sc.Running -= ahead
		sc.Backlog += ahead
		if w := st.Work[queue]; w.MeanMS > 0 && w.Done > 0 {
			done += w.Done
			weighted += w.MeanMS * float64(w.Done)
		}
	}
	if sc.Workers > 0 && slots > 0 {
		sc.WorkerConcurrency = max(1, slots/sc.Workers)
	}
	if done > 0 {
		sc.MeanHandlerTime = time.Duration(weighted / float64(done) * float64(time.Millisecond))
	}
}

// compute applies the formula.
func (sc *Scaling) compute() {
	s := sc.MeanHandlerTime.Seconds()
	sc.NeededConcurrency = sc.ArrivalRate*s + float64(sc.Backlog)*s/sc.DrainTime.Seconds()
	sc.DesiredWorkers = int(math.Ceil(sc.NeededConcurrency/float64(sc.WorkerConcurrency) - 1e-9))
	if sc.Backlog+sc.Running > 0 {
		sc.DesiredWorkers = max(sc.DesiredWorkers, 1)
	}
	if sc.MaxWorkers > 0 {
		sc.DesiredWorkers = min(sc.DesiredWorkers, sc.MaxWorkers)
	}
	sc.MeanHandlerSeconds = s
	sc.DrainSeconds = sc.DrainTime.Seconds()
	sc.RateWindowSeconds = sc.RateWindow.Seconds()
}
