package worker

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardq/shardq/internal/outbox"
	"github.com/shardq/shardq/internal/slots"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// Server runs handlers for the tasks of its queues, and enqueues the tasks
// of its schedules. Create it with NewServer, then Start it and Shutdown
// it (or just Run it). It never installs signal handlers and never closes
// the Redis client.
type Server struct {
	rdb     redis.UniversalClient
	cfg     Config
	handler Handler // nil: the server only runs its schedules
	log     *slog.Logger
	slots   *slots.Slots
	running registry
	probe   probe      // test seams; noProbe outside tests
	cron    *scheduler // nil without Schedules
	// quietRedis ends the routing of go-redis's log lines to log
	quietRedis func()
	codec      *envelope.Codec

	mu          sync.Mutex
	state       int // 0 new, 1 started, 2 stopped
	stopFetch   context.CancelFunc
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
	unhandled   sync.Map // task types warned of as having no handler
	started     time.Time
	// pmu guards parts (replaced, never changed in place: a reader may
	// keep the slice it got), work and nextOrd, which QueuePatterns change
	// while the server runs
	pmu     sync.RWMutex
	parts   []*part          // heaviest queue first
	work    map[string]*work // per queue, for the published status
	nextOrd int
	dyn     *dynamic // nil without QueuePatterns
	// fetchCtx is what fetchers run under (set by Start); layouts the
	// partition layouts last read (resize.go), lstate what the watcher keeps
	fetchCtx context.Context
	layouts  atomic.Pointer[map[string]layout.Layout]
	lstate   layoutState
	// failingSince is when Redis calls began to fail (unix ns), 0 while
	// they succeed
	failingSince atomic.Int64
	flows        *flows // chains' and batches' forwarding (workflows.go)
}

// NewServer returns a Server that runs h for tasks of cfg.Queues and
// enqueues the tasks of cfg.Schedules. h is nil for a server that only
// schedules: one with Schedules and no Queues or QueuePatterns.
func NewServer(rdb redis.UniversalClient, cfg Config, h Handler) (*Server, error) {
	if rcall.IsNil(rdb) {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if h == nil {
		switch {
		case len(cfg.Schedules) == 0:
			return nil, fmt.Errorf("%w: nil handler (a server without one runs only its Config.Schedules, and has none)", ErrInvalid)
		case len(cfg.Queues) > 0 || len(cfg.QueuePatterns) > 0:
			return nil, fmt.Errorf("%w: nil handler for Config.Queues or QueuePatterns (a server without one serves no queue)", ErrInvalid)
		}
	}
	cfg, err := cfg.withDefaults(h != nil)
	if err != nil {
		return nil, err
	}
	if cfg.WaitReplicas > 0 {
		if err := rcall.CheckWaitTimeout(rdb, cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	s := &Server{
		rdb: rdb, cfg: cfg,
		log:     cfg.Logger.With("worker", cfg.WorkerID),
		slots:   slots.New(cfg.Concurrency, cfg.StrictPriority),
		probe:   noProbe{},
		running: registry{all: map[*running]struct{}{}},
		lstate:  layoutState{emptySince: map[string]drainLook{}},
		codec:   config.CodecOf(cfg.Config),
	}
	if h != nil {
		s.handler = recovering(chain(recovering(h), cfg.Middleware))
	}
	s.codec.Dicts = envelope.RedisDicts(rdb, cfg.Prefix)
	if len(cfg.Schedules) > 0 {
		if s.cron, err = newScheduler(rdb, cfg.Config, cfg.Schedules, cfg.Clock); err != nil {
			return nil, err
		}
	}
	s.work = make(map[string]*work, len(cfg.Queues))
	for _, q := range slices.Sorted(maps.Keys(cfg.Queues)) {
		s.addQueue(q, cfg.Queues[q], partitionsOf(cfg.Config, q))
	}
	if len(cfg.QueuePatterns) > 0 {
		s.dyn = &dynamic{queues: map[string]*served{}}
	}
	return s, nil
}

// addQueue adds the partitions of queue q, run with weight, to s.parts,
// keeping the heaviest queues first so that popHigher walks them in
// priority order, and returns them.
func (s *Server) addQueue(q string, weight, partitions int) []*part {
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
func (s *Server) removeQueue(q string, sh *slots.Share) {
	s.pmu.Lock()
	s.parts = slices.DeleteFunc(slices.Clone(s.parts), func(p *part) bool { return p.queue == q })
	delete(s.work, q)
	s.pmu.Unlock()
	s.slots.DropShare(sh)
}

// partList returns the partitions the server runs now; the caller must
// not change the slice.
func (s *Server) partList() []*part {
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	return s.parts
}

// ID returns the worker ID this server uses in Redis.
func (s *Server) ID() string { return s.cfg.WorkerID }

// Start checks Redis, loads the scripts, registers this worker and starts
// fetching, and ticking the schedules. It returns once fetching has begun.
// ctx bounds only the start-up calls: the server keeps running after ctx
// is cancelled, until Shutdown (Run is Start, then Shutdown when its ctx
// ends). A server without a handler only reads where each schedule left
// off and starts ticking: it serves no queue and registers no worker.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 0 {
		if s.state == 2 {
			return fmt.Errorf("%w: Start on a server that was shut down; a Server runs once, make a new one", ErrInvalid)
		}
		return fmt.Errorf("%w: Start on a server already started", ErrInvalid)
	}
	if s.handler == nil {
		if err := s.cron.start(ctx); err != nil {
			return fmt.Errorf("worker start: %w", err)
		}
		s.state = 1
		s.log.Info("schedules started", "schedules", len(s.cfg.Schedules))
		return nil
	}
	if err := script.LoadAll(ctx, s.rdb); err != nil {
		return fmt.Errorf("worker start: %w", err)
	}
	s.warnIfEvicting(ctx)
	s.warnIfRetrying()
	s.started = time.Now()
	if _, err := s.touch(ctx, s.cfg.WorkerID); err != nil {
		return fmt.Errorf("worker start: %w", err)
	}
	if err := s.register(ctx); err != nil {
		// A full Redis (maxmemory, noeviction) refuses the registry's HSET,
		// but the scripts that drain a queue run anyway: start, so the
		// queue drains and makes room. Producers registered their queues.
		if !strings.HasPrefix(err.Error(), "OOM ") {
			return fmt.Errorf("worker start: %w", err)
		}
		s.log.Warn("Redis is out of memory: starting without registering queues or writing limits", "err", err)
	}
	if s.cron != nil {
		if err := s.cron.start(ctx); err != nil {
			return fmt.Errorf("worker start: %w", err)
		}
	}
	s.state = 1
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
	go s.flush(s.stopFlusher)
	s.background.Add(4)
	go func() { defer s.background.Done(); s.heartbeat(bg) }()
	go func() { defer s.background.Done(); s.forward(bg) }()
	go func() { defer s.background.Done(); s.sweepFlows(bg) }()
	go func() { defer s.background.Done(); s.rebalanceQuotas(bg) }()
	s.fetchCtx = fetch
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
	return nil
}

// register records the queues this server runs in the registry, so
// inspectors list them before anything was enqueued, and writes the
// configured limits. A queue whose partitions an operator set
// (Inspector.SetPartitions) counts the partitions its layout serves, not
// the configured count: a restarted worker neither shrinks the registry's
// count nor writes quotas over fewer partitions than hold them, which
// would let the quotas sum past the limit.
func (s *Server) register(ctx context.Context) error {
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
func (s *Server) warnIfEvicting(ctx context.Context) {
	if p := rcall.Evicting(ctx, s.rdb); p != "" {
		s.log.Warn("Redis maxmemory-policy is not noeviction: under memory pressure Redis may evict tasks",
			"maxmemory-policy", p)
	}
}

// warnIfRetrying logs a warning when go-redis may resend a command whose
// reply was lost. shardq cannot change the caller's client; a resent pop
// leases tasks that then wait for their lease to expire (late, not lost).
func (s *Server) warnIfRetrying() {
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

// Shutdown stops ticking the schedules (waiting for an enqueue under way)
// and fetching, waits up to Config.ShutdownTimeout (or ctx, whichever ends
// first) for running handlers, then cancels them with ErrShutdown; what
// did not finish goes back to the head of its queue without costing an
// attempt. It returns ctx's error if ctx ended first.
//
// Budget up to two seconds beyond the timeout: stopping fetchers waits for
// their current blocking slice (at most one second), and handlers that
// ignore their cancelled context get one more second before their tasks
// are requeued regardless (such a handler may still be running when
// Shutdown returns, while its task is pending again).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 1 {
		return fmt.Errorf("%w: Shutdown on a server not running", ErrInvalid)
	}
	s.state = 2
	if s.handler == nil {
		err := s.cron.shutdown(ctx)
		s.log.Info("schedules stopped")
		return err
	}
	if s.cron != nil {
		_ = s.cron.shutdown(ctx)
	}
	s.stopFetch()
	s.fetchers.Wait() // each ends within a one-second slice
	s.giveBackInflight()

	wait, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	if !waitGroup(wait, &s.tasks) {
		s.log.Warn("shutdown timeout: cancelling running handlers", "running", len(s.running.snapshot()))
		s.stopTasks(ErrShutdown)
		grace, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if !waitGroup(grace, &s.tasks) {
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

// Run starts the server, runs until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return s.Shutdown(context.Background())
}

// giveBackInflight returns anything a last blocking move left in this
// worker's in-flight lists to the head of its queue.
func (s *Server) giveBackInflight() { s.giveBack(s.partList()) }

// giveBack returns what this worker's in-flight lists of parts hold to
// the head of their queues.
func (s *Server) giveBack(parts []*part) {
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
func (s *Server) stopTasks(cause error) {
	s.cancelTasks(cause)
	for _, r := range s.running.snapshot() {
		r.cancel(cause)
	}
}

// requeueAbandoned gives back tasks whose handlers ignored cancellation.
func (s *Server) requeueAbandoned() {
	left := s.running.snapshot()
	s.log.Warn("handlers ignored cancellation; requeueing their tasks", "tasks", len(left))
	for _, r := range left {
		s.finish(outcome{p: r.p, id: r.task.sid, token: r.task.token, kind: outcomeRequeue})
	}
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// logRedisError logs a failed Redis step of a loop that will retry it.
func (s *Server) logRedisError(step string, err error) {
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
func (s *Server) redisOK() {
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
func (s *Server) servedQueues() map[string]int {
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	out := make(map[string]int, len(s.work))
	for _, p := range s.parts {
		out[p.queue] = p.share.Weight()
	}
	return out
}
