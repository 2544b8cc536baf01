package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// heartbeat runs every Config.Heartbeat until ctx ends: it marks this
// process alive, extends the leases of its running tasks (one script call
// per partition), cancels handlers whose lease was lost, and reaps what
// crashed or stalled workers left behind.
func (s *Engine) heartbeat(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		if err := s.beat(ctx); err != nil && ctx.Err() == nil {
			s.logRedisError("heartbeat", err)
		} else if err == nil {
			s.redisOK()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// beat is one heartbeat: two round trips.
func (s *Engine) beat(ctx context.Context) error {
	stale, err := s.touch(ctx, s.cfg.WorkerID)
	if err != nil {
		return err
	}
	stale = slices.DeleteFunc(stale, func(id string) bool { return id == s.cfg.WorkerID })
	if len(stale) > 0 {
		if err := s.reapElsewhere(ctx, stale); err != nil {
			// keep them listed, to be found stale again at the next beat
			s.logRedisError("reap stale workers", err)
			stale = nil
		}
	}
	byPart := map[*part][]*running{}
	for _, r := range s.running.snapshot() {
		byPart[r.p] = append(byPart[r.p], r)
	}
	// tasks leased ahead keep their leases while they wait for a slot
	waiting := map[*part][]leased{}
	for _, p := range s.partList() {
		if w := p.ahead.snapshot(); len(w) > 0 {
			waiting[p] = w
		}
	}
	s.probe.BeforeExtend()
	extends := map[*part]*redis.Cmd{}
	var version *redis.StringCmd
	err = rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
		version = pipe.Get(ctx, keys.Protocol(s.cfg.Prefix))
		extend := func(p *part) {
			args := []any{s.cfg.now(), s.cfg.Lease.Milliseconds()}
			for _, r := range byPart[p] {
				args = append(args, r.job.sid, r.job.token)
			}
			for _, l := range waiting[p] {
				args = append(args, l.id, l.token)
			}
			extends[p] = pipe.Run(ctx, script.Extend, []string{p.k.Active(), p.k.State(), p.k.Cancel()}, args...)
		}
		for p := range byPart {
			extend(p)
		}
		for p := range waiting {
			if byPart[p] == nil {
				extend(p)
			}
		}
		for _, p := range s.partList() {
			s.queueReap(ctx, pipe, p, stale)
		}
		s.publishStatus(ctx, pipe)
		if len(stale) > 0 {
			pipe.ZRem(ctx, keys.Workers(s.cfg.Prefix), toAny(stale)...)
			pipe.HDel(ctx, keys.WorkerStatus(s.cfg.Prefix), stale...)
		}
		return nil
	})
	s.checkProtocol(version)
	for p, cmd := range extends {
		lost, cancelled, err := parseExtend(cmd)
		if err != nil {
			continue
		}
		s.dropAhead(p, waiting[p], lost, cancelled)
		for _, r := range byPart[p] {
			if (len(lost) > 0 || len(cancelled) > 0) && !s.running.has(r) {
				// it finished while the heartbeat was on its way, and its
				// ack, written meanwhile, ended the lease: nothing to cancel
				continue
			}
			switch {
			case slices.Contains(lost, r.job.sid):
				s.log.Warn("lease lost; cancelling the handler", "task", r.job.id(), "queue", p.queue)
				if s.cfg.Observer != nil {
					s.cfg.Observer.LeaseLost(p.queue)
				}
				r.cancel(s.cfg.Causes.LeaseLost)
			case slices.Contains(cancelled, r.job.sid):
				s.log.Info("cancelled by an operator; cancelling the handler", "task", r.job.id(), "queue", p.queue)
				r.cancel(s.cfg.Causes.Cancelled)
			}
		}
	}
	if len(stale) > 0 && err == nil {
		// what their in-flight lists held is pending again now; what they
		// had leased waits for its lease to expire, up to Lease after
		// their last extension, and the reap that follows brings it back
		s.log.Info("reaped crashed or stalled workers: their in-flight tasks are pending again; "+
			"their leased tasks run again once their leases expire, within the lease of the workers' last heartbeat",
			"workers", stale, "lease", s.cfg.Lease)
	}
	return err
}

// touch records this worker's heartbeat (id "" only reads) and returns the
// workers whose heartbeat is stale.
func (s *Engine) touch(ctx context.Context, id string) ([]string, error) {
	stale, err := script.Heartbeat.Run(ctx, s.rdb, []string{keys.Workers(s.cfg.Prefix)}, id,
		s.cfg.staleAfter().Milliseconds(), s.cfg.now()).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	return stale, nil
}

// queueReap queues a reap of partition p: expired leases, the in-flight
// lists of the given workers, expired done tasks.
func (s *Engine) queueReap(ctx context.Context, pipe *rcall.Pipe, p *part, workers []string) *redis.Cmd {
	k := p.k
	args := []any{k.T, s.cfg.now(), s.cfg.ShardSize, 1000}
	args = append(args, toAny(workers)...)
	return pipe.Run(ctx, script.Reap, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Expire(), k.Done(), k.Guard()}, args...)
}

// parseExtend reads extend.lua's {lost IDs, cancelled IDs}.
func parseExtend(cmd *redis.Cmd) (lost, cancelled []string, err error) {
	res, err := cmd.Slice()
	if err != nil || len(res) != 2 {
		return nil, nil, fmt.Errorf("extend reply %v: %w", res, err)
	}
	strs := func(v any) []string {
		l, _ := v.([]any)
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return strs(res[0]), strs(res[1]), nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// checkProtocol reads the prefix's protocol version as the heartbeat found
// it. A version of another major means an operator migrated the prefix
// while this worker ran: what it would lease now, it could not read, so
// it stops leasing (its running handlers finish) and says why at every
// beat, rather than sending those tasks to dead.
func (s *Engine) checkProtocol(cmd *redis.StringCmd) {
	v, err := cmd.Result()
	if err != nil {
		return // none stored (an operator's reset), or Redis failed: the next beat sees
	}
	stored, err := protocol.Parse(v)
	if err == nil && protocol.Current.Compatible(stored) {
		return
	}
	// stopFetch is nil in tests that drive an engine never launched
	if s.stopFetch != nil && s.refusing.CompareAndSwap(false, true) {
		s.stopFetch()
		// what a last blocking move brought goes back, as at Shutdown
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			s.fetchers.Wait()
			s.giveBackInflight()
		}()
	}
	s.log.Error("the prefix's data follows another protocol version: this worker leases no more tasks; "+
		"stop it, and run workers of the prefix's version",
		"key", keys.Protocol(s.cfg.Prefix), "stored", v, "worker", protocol.Current.String())
}
