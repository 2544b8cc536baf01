package serve

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// prefetchWait bounds how long, by the queue's recent handler times, a
// prefetched task is expected to wait for a slot: the fetcher leases no
// more ahead than this worker's handlers would start in that time. Quick
// handlers get whole batches ahead (a round trip then carries several
// slots' worth of tasks); handlers of a few milliseconds or more get few
// or none, so a task never waits long in a worker while another worker
// is idle, nor holds a lease it does not use.
const prefetchWait = 2 * time.Millisecond

// ahead holds the tasks a partition's fetcher leased ahead of its free
// slots (prefetch). The fetcher starts them, oldest first, on the slots it
// acquires next, before it pops again, so they keep the queue's share of
// slots and its place under strict priority. The heartbeat extends their
// leases with the running tasks'; a lost or cancelled lease takes a task
// out; when the fetcher stops (shutdown, a partition dropped) it gives the
// rest back to the head of the queue without costing an attempt.
type ahead struct {
	mu    sync.Mutex
	tasks []leased
	// the fetcher's own: the queue's handler totals at its last look, and
	// the mean handler time since
	seenDone, seenNanos int64
	mean                time.Duration
}

// take removes and returns up to k of the oldest tasks.
func (a *ahead) take(k int) []leased {
	a.mu.Lock()
	defer a.mu.Unlock()
	k = min(k, len(a.tasks))
	if k == 0 {
		return nil
	}
	out := slices.Clone(a.tasks[:k])
	a.tasks = slices.Delete(a.tasks, 0, k)
	return out
}

// put appends tasks to the held ones.
func (a *ahead) put(tasks []leased) {
	if len(tasks) == 0 {
		return
	}
	a.mu.Lock()
	a.tasks = append(a.tasks, tasks...)
	a.mu.Unlock()
}

// len returns how many tasks are held.
func (a *ahead) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tasks)
}

// snapshot returns a copy of the held tasks, for the heartbeat.
func (a *ahead) snapshot() []leased {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tasks)
}

// remove takes the tasks with the given IDs out and returns them: their
// lease was lost or cancelled while they waited.
func (a *ahead) remove(ids []string) []leased {
	if len(ids) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []leased
	a.tasks = slices.DeleteFunc(a.tasks, func(l leased) bool {
		if slices.Contains(ids, l.id) {
			out = append(out, l)
			return true
		}
		return false
	})
	return out
}

// prefetch returns how many tasks p's fetcher leases beyond the n slots it
// holds. None unless the queue has a backlog (the last pop filled all it
// asked for; with one slot too, where a fetcher never waits to gather a
// batch), prefetch is on and the priority is not strict; else what this
// worker's handlers would start within prefetchWait at their recent mean
// time, less what is already held, within Config.Prefetch and the 1,000 a
// pop leases at most.
func (s *Engine) prefetch(p *part, n int, backlog bool) int {
	if !backlog || s.cfg.Prefetch <= 0 || s.cfg.StrictPriority {
		return 0
	}
	a := &p.ahead
	done, nanos := p.work.done.Load(), p.work.nanos.Load()
	if d := done - a.seenDone; d > 0 {
		a.mean = time.Duration((nanos - a.seenNanos) / d)
	}
	a.seenDone, a.seenNanos = done, nanos
	if a.mean <= 0 {
		return 0 // nothing ran yet: no handler time to go by
	}
	k := s.cfg.Prefetch
	if quick := int64(prefetchWait) * int64(s.cfg.Concurrency) / int64(a.mean); quick < int64(k) {
		k = int(quick)
	}
	return max(0, min(k-a.len(), 1000-n))
}

// startAhead starts up to n of the tasks p's fetcher leased ahead on n
// slots it holds, and returns how many it started.
func (s *Engine) startAhead(p *part, n int) int {
	tasks := p.ahead.take(n)
	s.start(p, tasks)
	return len(tasks)
}

// giveBackAhead requeues the tasks p's fetcher leased ahead and never
// started: they go back to the head of their queue without costing an
// attempt, as tasks a shutdown cancels do.
func (s *Engine) giveBackAhead(p *part) {
	for _, l := range p.ahead.take(math.MaxInt) {
		s.finish(outcome{p: p, id: l.id, token: l.token, kind: outcomeRequeue})
	}
}

// dropAhead takes out of p's tasks leased ahead those whose lease the
// heartbeat found lost (another worker has them now: they are forgotten)
// or cancelled by an operator (they fail without running, as a cancelled
// handler's task does). waited is what the heartbeat extended of them: one
// that is no longer held started meanwhile, and its handler is told as a
// running one's is.
func (s *Engine) dropAhead(p *part, waited []leased, lost, cancelled []string) {
	if len(waited) == 0 || len(lost)+len(cancelled) == 0 {
		return
	}
	gone := p.ahead.remove(lost)
	if len(gone) > 0 {
		s.log.Warn("lease lost while waiting for a slot; another worker has the tasks", "queue", p.queue, "tasks", len(gone))
		if s.cfg.Observer != nil {
			s.cfg.Observer.LeaseLost(p.queue)
		}
	}
	stopped := p.ahead.remove(cancelled)
	for _, l := range stopped {
		j := new(Job)
		if _, err := s.decode(j, p, l); err != nil {
			s.warnUndecodable(p, l, err)
			s.finish(undecodable(p, l, err))
			continue
		}
		s.log.Info("cancelled by an operator before it started", "task", j.id(), "queue", p.queue)
		c := s.cfg.Causes
		s.finish(s.outcomeOf(p, j, Verdict{Delay: -1, Err: c.Dead(fmt.Errorf("%w: before it started", c.Cancelled))}))
	}
	started := map[string]bool{}
	for _, l := range waited {
		if (slices.Contains(lost, l.id) || slices.Contains(cancelled, l.id)) &&
			!slices.ContainsFunc(gone, func(g leased) bool { return g.id == l.id }) &&
			!slices.ContainsFunc(stopped, func(g leased) bool { return g.id == l.id }) {
			started[l.id] = true
		}
	}
	if len(started) == 0 {
		return
	}
	for _, r := range s.running.snapshot() {
		switch {
		case r.p != p || !started[r.job.sid]:
		case slices.Contains(lost, r.job.sid):
			r.cancel(s.cfg.Causes.LeaseLost)
		default:
			r.cancel(s.cfg.Causes.Cancelled)
		}
	}
}
