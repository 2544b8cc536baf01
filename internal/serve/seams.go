package serve

import (
	"context"

	"github.com/shardq/shardq/internal/outbox"
	"github.com/shardq/shardq/internal/wire"
)

// What package worker's tests observe of a running engine: the tests
// that drive a whole Server reach its engine only through these and
// SetProbe.

// Queues returns the queues the engine serves now, with their weights:
// Config.Queues and those QueuePatterns matched.
func (s *Engine) Queues() map[string]int { return s.servedQueues() }

// Running returns how many handlers run now.
func (s *Engine) Running() int { return len(s.running.snapshot()) }

// LeasedAhead returns the IDs of the tasks leased ahead of the free
// slots (Config.Prefetch), waiting in the engine.
func (s *Engine) LeasedAhead() []string {
	var ids []string
	for _, p := range s.partList() {
		for _, l := range p.ahead.snapshot() {
			ids = append(ids, wire.PublicID(l.id))
		}
	}
	return ids
}

// Outcomes returns how many outcomes wait to be written.
func (s *Engine) Outcomes() int { return s.outbox.Len() }

// StoredID returns the job's ID as the scripts have it (wire.StoredID).
func (j *Job) StoredID() string { return j.sid }

// Token returns the fencing token of the job's lease.
func (j *Job) Token() int64 { return j.token }

// Widths returns how many partitions the engine serves of each queue.
func (s *Engine) Widths() map[string]int { return s.widths() }

// DrainConfirm is how long the removed partitions of a queue must be seen
// empty before the drain ends.
const DrainConfirm = drainConfirm

// Lease leases up to n tasks of the engine's first partition, as a pop
// does, and returns what a handler would read of them, without running
// them: the fairness tests of a never-started engine read the order tasks
// start in.
func (s *Engine) Lease(ctx context.Context, n int) ([]Fields, error) {
	if s.outbox == nil {
		s.outbox = outbox.New[outcome]()
	}
	p := s.partList()[0]
	r, err := s.dequeue(ctx, p, n, 0, false)
	if err != nil {
		return nil, err
	}
	out := make([]Fields, len(r.tasks))
	for i, l := range r.tasks {
		if out[i], err = s.decode(new(Job), p, l); err != nil {
			return nil, err
		}
	}
	return out, nil
}
