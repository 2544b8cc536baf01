package serve

import (
	"context"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
)

// dynamic is the queues Config.QueuePatterns matched: what discover
// serves now. Only discover's goroutine touches it.
type dynamic struct {
	queues map[string]*served
}

// served is one queue a pattern matched, and its fetchers.
type served struct {
	ctx      context.Context // what its fetchers run under
	parts    []*part
	stop     context.CancelFunc
	fetchers sync.WaitGroup
}

// discover reads the queue registry every QueueRefresh until ctx ends,
// and starts and stops serving the queues that QueuePatterns match; then
// it follows the partition layouts operators set (resize.go). A failed
// read changes nothing: the queues served go on being served.
func (s *Engine) discover(ctx context.Context) {
	for {
		if s.dyn != nil {
			if err := s.refreshQueues(ctx); err != nil && ctx.Err() == nil {
				s.logRedisError("read queue registry", err)
			}
		}
		if err := s.followLayouts(ctx); err != nil && ctx.Err() == nil {
			s.logRedisError("follow partition layouts", err)
		}
		select {
		case <-ctx.Done():
			return // the fetchers end with ctx too
		case <-time.After(s.cfg.QueueRefresh):
		}
	}
}

// refreshQueues is one look at the registry: one HGETALL.
func (s *Engine) refreshQueues(ctx context.Context) error {
	raw, err := s.rdb.HGetAll(ctx, keys.Queues(s.cfg.Prefix)).Result()
	if err != nil {
		return err
	}
	for q, sv := range s.dyn.queues {
		if _, ok := raw[q]; !ok {
			s.stopServing(q, sv)
		}
	}
	for q, v := range raw {
		if _, ok := s.dyn.queues[q]; ok {
			continue
		}
		weight, ok := s.cfg.matchWeight(q)
		if !ok || config.CheckName(q) != nil {
			continue
		}
		n := partitionsOf(s.cfg.Config, q)
		if _, configured := s.cfg.Partitions[q]; !configured {
			// the producers' count, as they recorded it
			if r, err := layout.ParseCount(v); err == nil {
				n = r
			}
		}
		s.startServing(ctx, q, weight, n)
	}
	return nil
}

// startServing starts fetchers on the n partitions of queue q.
func (s *Engine) startServing(ctx context.Context, q string, weight, n int) {
	qctx, stop := context.WithCancel(ctx)
	sv := &served{ctx: qctx, parts: s.addQueue(q, weight, n), stop: stop}
	s.dyn.queues[q] = sv
	for _, p := range sv.parts {
		s.runFetcher(qctx, p, &sv.fetchers) // discover holds one of s.fetchers: legal while Shutdown waits
	}
	s.log.Info("serving a queue matched by QueuePatterns", "queue", q, "weight", weight, "partitions", n)
}

// stopServing stops the fetchers of queue q, which left the registry
// (deleted), and gives back what their last blocking move took. Its
// running tasks finish, and are acked, as usual.
func (s *Engine) stopServing(q string, sv *served) {
	sv.stop()
	sv.fetchers.Wait() // each ends within its one-second slice
	s.giveBack(sv.parts)
	s.removeQueue(q, sv.parts[0].share)
	delete(s.dyn.queues, q)
	s.log.Info("stopped serving a queue no longer in the registry", "queue", q)
}
