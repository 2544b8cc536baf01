package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardq/shardq/internal/outbox"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/slots"
	"github.com/shardq/shardq/internal/wait"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/limits"
	"github.com/shardq/shardq/internal/logging"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// Engine is a worker's engine: it fetches its queues' tasks, runs each
// through Config.Handle, writes their outcomes, keeps their leases, and
// forwards scheduled tasks and workflows' news. worker.Server holds one,
// and the schedules beside it.
type Engine struct {
	rdb     redis.UniversalClient
	cfg     Config
	log     *slog.Logger
	slots   *slots.Slots
	running registry
	probe   Probe // test seams; noProbe outside tests
	// quietRedis ends the routing of go-redis's log lines to log
	quietRedis func()
	codec      *envelope.Codec

	stopFetch   context.CancelFunc
	refusing    atomic.Bool // the prefix moved to another protocol major (heartbeat.go)
	stopBg      context.CancelFunc
	cancelTasks context.CancelCauseFunc
	handlerCtx  context.Context
	fetchers    sync.WaitGroup
	background  sync.WaitGroup
	tasks       sync.WaitGroup
	outbox      *outbox.Box[outcome]
	runners     *runners
	stopFlusher chan struct{}
	flusherDone chan struct{}
	started     time.Time
	// pmu guards parts (replaced, never changed in place: a reader may
	// keep the slice it got), work and nextOrd, which QueuePatterns change
	// while the server runs
	pmu     sync.RWMutex
	parts   []*part          // heaviest queue first
	work    map[string]*work // per queue, for the published status
	nextOrd int
	dyn     *dynamic // nil without QueuePatterns
	// fetchCtx is what fetchers run under (set by Launch); layouts the
	// partition layouts last read (resize.go), lstate what the watcher keeps
	fetchCtx context.Context
	layouts  atomic.Pointer[map[string]layout.Layout]
	lstate   layoutState
	// failingSince is when Redis calls began to fail (unix ns), 0 while
	// they succeed
	failingSince atomic.Int64
	flows        *flows // workflows' forwarding (workflows.go)
}

// New returns the engine of a worker that serves cfg's queues. cfg comes
// checked and with its defaults (worker.NewServer).
func New(rdb redis.UniversalClient, cfg Config) *Engine {
	s := &Engine{
		rdb: rdb, cfg: cfg,
		log:     cfg.Log,
		slots:   slots.New(cfg.Concurrency, cfg.StrictPriority),
		probe:   noProbe{},
		running: registry{all: map[*running]struct{}{}},
		lstate:  layoutState{emptySince: map[string]drainLook{}},
		codec:   config.CodecOf(cfg.Config),
	}
	s.codec.Dicts = envelope.RedisDicts(rdb, cfg.Prefix)
	s.work = make(map[string]*work, len(cfg.Queues))
	for _, q := range slices.Sorted(maps.Keys(cfg.Queues)) {
		s.addQueue(q, cfg.Queues[q], partitionsOf(cfg.Config, q))
	}
	if len(cfg.QueuePatterns) > 0 {
		s.dyn = &dynamic{queues: map[string]*served{}}
	}
	return s
}

// addQueue adds the partitions of queue q, run with weight, to s.parts,
// keeping the heaviest queues first so that popHigher walks them in
// priority order, and returns them.
func (s *Engine) addQueue(q string, weight, partitions int) []*part {
	sh := s.slots.NewShare(weight)
	w := &work{}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	added := make([]*part, partitions)
	for i := range added {
		added[i] = newPart(keys.For(s.cfg.Prefix, q, i), q, i, s.nextOrd, sh, s.cfg.WorkerID)
		added[i].work = w
		s.nextOrd++
	}
	s.work[q] = w
	parts := append(slices.Clone(s.parts), added...)
	slices.SortStableFunc(parts, func(a, b *part) int { return b.share.Weight() - a.share.Weight() })
	s.parts = parts
	return added
}

// removeQueue takes queue q's partitions out of s.parts and its share out
// of the slots' draw.
func (s *Engine) removeQueue(q string, sh *slots.Share) {
	s.pmu.Lock()
	s.parts = slices.DeleteFunc(slices.Clone(s.parts), func(p *part) bool { return p.queue == q })
	delete(s.work, q)
	s.pmu.Unlock()
	s.slots.DropShare(sh)
}

// partList returns the partitions the server runs now; the caller must
// not change the slice.
func (s *Engine) partList() []*part {
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	return s.parts
}

// SetProbe replaces the engine's test seams; call it before Launch.
func (s *Engine) SetProbe(p Probe) { s.probe = p }

// Open checks Redis and the prefix's protocol version, loads the scripts
// and registers this worker and its queues; Launch then starts the
// engine's loops. Between the two, worker.Server starts its schedules.
func (s *Engine) Open(ctx context.Context) error {
	// before any write: a prefix of another major is not this worker's
	if _, err := protocol.Claim(ctx, s.rdb, s.cfg.Prefix, protocol.Current); err != nil {
		return err
	}
	if err := script.LoadAll(ctx, s.rdb); err != nil {
		return err
	}
	s.warnIfEvicting(ctx)
	s.warnIfRetrying()
	s.started = time.Now()
	if _, err := s.touch(ctx, s.cfg.WorkerID); err != nil {
		return err
	}
	if err := s.register(ctx); err != nil {
		// A full Redis (maxmemory, noeviction) refuses the registry's HSET,
		// but the scripts that drain a queue run anyway: start, so the
		// queue drains and makes room. Producers registered their queues.
		if !rcall.IsOOM(err) {
			return err
		}
		s.log.Warn("Redis is out of memory: starting without registering queues or writing limits", "err", err)
	}
	return nil
}

// Launch starts fetching, the flusher and the background loops
// (heartbeat, forwarding, workflows, quotas); it returns at once.
func (s *Engine) Launch() {
	s.quietRedis = logging.RedisTo(s.log) // go-redis's own lines, while this server runs
	s.outbox = outbox.New[outcome]()
	s.flows = s.newFlows()
	s.runners = newRunners(s.runJob)
	s.stopFlusher = make(chan struct{})
	s.flusherDone = make(chan struct{})
	s.handlerCtx, s.cancelTasks = context.WithCancelCause(context.Background())
	bg, stopBg := context.WithCancel(context.Background())
	fetch, stopFetch := context.WithCancel(context.Background())
	s.stopBg, s.stopFetch = stopBg, stopFetch
	s.fetchCtx = fetch
	go s.flush(s.stopFlusher)
	s.background.Add(4)
	go func() { defer s.background.Done(); s.heartbeat(bg) }()
	go func() { defer s.background.Done(); s.forward(bg) }()
	go func() { defer s.background.Done(); s.sweepFlows(bg) }()
	go func() { defer s.background.Done(); s.rebalanceQuotas(bg) }()
	for _, p := range s.partList() {
		s.runFetcher(fetch, p, nil)
	}
	// counted with the fetchers, which it starts: Shutdown waits for both
	s.fetchers.Add(1)
	go func() { defer s.fetchers.Done(); s.discover(fetch) }()
	if len(s.cfg.QueuePatterns) > 0 {
		s.log.Info("worker started", "queues", queueList(s.cfg.Queues), "patterns", queueList(s.cfg.QueuePatterns), "concurrency", s.cfg.Concurrency)
	} else {
		s.log.Info("worker started", "queues", queueList(s.cfg.Queues), "concurrency", s.cfg.Concurrency)
	}
}

// register records the queues this server runs in the registry, so
// inspectors list them before anything was enqueued, and writes the
// configured limits. A queue whose partitions an operator set
// (Inspector.SetPartitions) counts the partitions its layout serves, not
// the configured count: a restarted worker neither shrinks the registry's
// count nor writes quotas over fewer partitions than hold them, which
// would let the quotas sum past the limit.
func (s *Engine) register(ctx context.Context) error {
	lays, err := layout.ReadAll(ctx, s.rdb, s.cfg.Prefix)
	if err != nil {
		return err
	}
	served := func(q string) int {
		if l, ok := lays[q]; ok {
			return l.Serve
		}
		return partitionsOf(s.cfg.Config, q)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range s.cfg.Queues {
			p.HSet(ctx, keys.Queues(s.cfg.Prefix), q, served(q))
		}
		for q, l := range s.cfg.Limits {
			if served(q) == 1 {
				limits.Write(ctx, p, keys.For(s.cfg.Prefix, q, 0), limits.Values(l))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// a partitioned queue's limits are fleet-wide: quotas per partition
	for q, l := range s.cfg.Limits {
		if n := served(q); n > 1 {
			if err := limits.WriteFleetWide(ctx, s.rdb, s.cfg.Prefix, q, n, s.cfg.ShardSize, limits.Values(l)); err != nil {
				return err
			}
		}
	}
	return nil
}

// warnIfEvicting logs a warning when Redis may evict keys: an evicted
// pending list loses tasks. Managed Redis may forbid CONFIG; then it is quiet.
func (s *Engine) warnIfEvicting(ctx context.Context) {
	if p := rcall.Evicting(ctx, s.rdb); p != "" {
		s.log.Warn("Redis maxmemory-policy is not noeviction: under memory pressure Redis may evict tasks",
			"maxmemory-policy", p)
	}
}

// warnIfRetrying logs a warning when go-redis may resend a command whose
// reply was lost. shardq cannot change the caller's client; a resent pop
// leases tasks that then wait for their lease to expire (late, not lost).
func (s *Engine) warnIfRetrying() {
	var retries int
	switch c := s.rdb.(type) {
	case *redis.Client:
		retries = c.Options().MaxRetries
	case *redis.ClusterClient:
		retries = c.Options().MaxRetries
	default:
		return
	}
	if retries > 0 {
		s.log.Warn("the Redis client retries commands after a lost reply (MaxRetries > 0): a retried pop "+
			"delays its tasks until their lease expires; give workers a client with MaxRetries: -1", "max_retries", retries)
	}
}

// Shutdown stops fetching, waits up to Config.ShutdownTimeout (or ctx,
// whichever ends first) for running handlers, then cancels them with
// Causes.Shutdown; what did not finish goes back to the head of its queue
// without costing an attempt. It returns ctx's error if ctx ended first.
func (s *Engine) Shutdown(ctx context.Context) error {
	s.stopFetch()
	s.fetchers.Wait() // each ends within a one-second slice
	s.giveBackInflight()

	bounded, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	if !wait.Group(bounded, &s.tasks) {
		s.log.Warn("shutdown timeout: cancelling running handlers", "running", len(s.running.snapshot()))
		s.stopTasks(s.cfg.Causes.Shutdown)
		grace, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if !wait.Group(grace, &s.tasks) {
			s.requeueAbandoned()
		}
	}
	close(s.stopFlusher)
	<-s.flusherDone
	s.stopBg()
	s.background.Wait()
	if _, err := s.rdb.Pipelined(context.Background(), func(pipe redis.Pipeliner) error {
		pipe.ZRem(context.Background(), keys.Workers(s.cfg.Prefix), s.cfg.WorkerID)
		pipe.HDel(context.Background(), keys.WorkerStatus(s.cfg.Prefix), s.cfg.WorkerID)
		return nil
	}); err != nil {
		s.log.Warn("could not unregister worker", "err", err)
	}
	s.runners.stop()
	s.log.Info("worker stopped")
	s.quietRedis()
	return ctx.Err()
}

// giveBackInflight returns anything a last blocking move left in this
// worker's in-flight lists to the head of its queue.
func (s *Engine) giveBackInflight() { s.giveBack(s.partList()) }

// giveBack returns what this worker's in-flight lists of parts hold to
// the head of their queues.
func (s *Engine) giveBack(parts []*part) {
	ctx := context.Background()
	err := rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
		for _, p := range parts {
			k := p.k
			pipe.Run(ctx, script.Reap, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Expire(), k.Done(), k.Guard()},
				k.T, s.cfg.now(), s.cfg.ShardSize, 0, s.cfg.WorkerID)
		}
		return nil
	})
	if err != nil {
		s.log.Warn("could not give back in-flight tasks; the reaper will", "err", err)
	}
}

// stopTasks cancels every running handler with cause. Handlers joining
// the registry after the snapshot see s.handlerCtx done and cancel
// themselves.
func (s *Engine) stopTasks(cause error) {
	s.cancelTasks(cause)
	for _, r := range s.running.snapshot() {
		r.cancel(cause)
	}
}

// requeueAbandoned gives back tasks whose handlers ignored cancellation.
func (s *Engine) requeueAbandoned() {
	left := s.running.snapshot()
	s.log.Warn("handlers ignored cancellation; requeueing their tasks", "tasks", len(left))
	for _, r := range left {
		s.finish(outcome{p: r.p, id: r.job.sid, token: r.job.token, kind: outcomeRequeue})
	}
}

// logRedisError logs a failed Redis step of a loop that will retry it.
func (s *Engine) logRedisError(step string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.failingSince.CompareAndSwap(0, time.Now().UnixNano())
	rcall.Reroute(s.rdb, err) // a cluster's slot map may be stale
	if s.cfg.Observer != nil {
		s.cfg.Observer.RedisError(step)
	}
	s.log.Warn("redis call failed; retrying", "step", step, "err", err)
}

// redisOK notes a Redis call that succeeded: after failures it says, once,
// that Redis answers again, so an operator reading the log sees the end of
// an outage and not only its start.
func (s *Engine) redisOK() {
	if s.failingSince.Load() == 0 {
		return // the common case: one atomic read
	}
	if since := s.failingSince.Swap(0); since != 0 {
		s.log.Info("redis calls succeed again", "failing_for", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
}

// queueList writes queue weights as the binary's --queues flag takes them,
// "default:1,email:3", sorted by name so every start logs the same line.
func queueList(queues map[string]int) string {
	names := slices.Sorted(maps.Keys(queues))
	for i, q := range names {
		names[i] = fmt.Sprintf("%s:%d", q, queues[q])
	}
	return strings.Join(names, ",")
}

// servedQueues returns the queues the server runs now, with their
// weights: Config.Queues and those QueuePatterns matched.
func (s *Engine) servedQueues() map[string]int {
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	out := make(map[string]int, len(s.work))
	for _, p := range s.parts {
		out[p.queue] = p.share.Weight()
	}
	return out
}
