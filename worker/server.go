package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/serve"
)

// Server runs handlers for the tasks of its queues, and enqueues the tasks
// of its schedules. Create it with NewServer, then Start it and Shutdown
// it (or just Run it). It never installs signal handlers and never closes
// the Redis client.
type Server struct {
	cfg     Config
	handler Handler       // nil: the server only runs its schedules
	engine  *serve.Engine // nil without a handler
	cron    *scheduler    // nil without Schedules
	// unhandled holds the task types warned of as having no handler
	unhandled sync.Map

	mu    sync.Mutex
	state int // 0 new, 1 started, 2 stopped
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
	s := &Server{cfg: cfg}
	if len(cfg.Schedules) > 0 {
		if s.cron, err = newScheduler(rdb, cfg.Config, cfg.Schedules, cfg.Clock); err != nil {
			return nil, err
		}
	}
	if h != nil {
		s.handler = recovering(chain(recovering(h), cfg.Middleware))
		s.engine = serve.New(rdb, s.engineConfig())
	}
	return s, nil
}

// engineConfig is what s's engine runs with: s.cfg, and s.handle to run
// each task.
func (s *Server) engineConfig() serve.Config {
	c := s.cfg
	ec := serve.Config{
		Config: c.Config, Queues: c.Queues, StrictPriority: c.StrictPriority, QueuePatterns: c.QueuePatterns,
		QueueRefresh: c.QueueRefresh, Concurrency: c.Concurrency, Limits: c.Limits, Lease: c.Lease,
		Heartbeat: c.Heartbeat, ShutdownTimeout: c.ShutdownTimeout, ForwardInterval: c.ForwardInterval,
		WorkflowSweep: c.WorkflowSweep, FetchSize: c.FetchSize, Prefetch: c.Prefetch,
		SucceededSize: c.SucceededSize, DeadSize: c.DeadSize, WorkerID: c.WorkerID, Clock: c.Clock,
		Log:    c.Logger.With("worker", c.WorkerID),
		Handle: s.handle,
		Causes: serve.Causes{Shutdown: ErrShutdown, Cancelled: ErrCancelled, LeaseLost: ErrLeaseLost, Dead: SkipRetry},
	}
	if c.Observer != nil {
		ec.Observer = c.Observer
	}
	return ec
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
	if s.engine == nil {
		if err := s.cron.start(ctx); err != nil {
			return fmt.Errorf("worker start: %w", err)
		}
		s.state = 1
		s.cfg.Logger.Info("schedules started", "worker", s.cfg.WorkerID, "schedules", len(s.cfg.Schedules))
		return nil
	}
	if err := s.engine.Open(ctx); err != nil {
		return fmt.Errorf("worker start: %w", err)
	}
	if s.cron != nil {
		if err := s.cron.start(ctx); err != nil {
			return fmt.Errorf("worker start: %w", err)
		}
	}
	s.state = 1
	s.engine.Launch()
	return nil
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
	if s.engine == nil {
		err := s.cron.shutdown(ctx)
		s.cfg.Logger.Info("schedules stopped", "worker", s.cfg.WorkerID)
		return err
	}
	if s.cron != nil {
		_ = s.cron.shutdown(ctx)
	}
	return s.engine.Shutdown(ctx)
}

// Run starts the server, runs until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return s.Shutdown(context.Background())
}
