package serve

import (
	"context"
	"sync"

	"github.com/shardq/shardq/internal/script"
)

// lostLeases tracks the pop and claim calls on one partition whose reply
// never came back. Redis may still have run such a call (it stalled past
// the client's read timeout, then carried on), leasing tasks to this
// worker that it never saw. Left alone, they would wait out their lease,
// then come back costing an attempt, or die without having run when it
// was their last. So after the next answered call the fetcher looks them
// up (leasesOf) and gives them back to their queue without the attempt.
type lostLeases struct {
	mu     sync.Mutex
	lastOK int64 // server ms of the last answered call
	open   bool  // a reply was lost and its tasks not yet looked for
	after  int64 // the lost calls ran after this server time
	known  map[string]bool
	// pops of this partition by other fetchers (popHigher, under strict
	// priority): in flight now, and begun so far. A look-up that one of
	// them may have overlapped could take its tasks, not yet known here,
	// for lost ones; it is discarded and made again later.
	others, begun int
}

// begin records a pop of the partition by another fetcher; end, its end
// (after answered or lost).
func (l *lostLeases) begin() {
	l.mu.Lock()
	l.others++
	l.begun++
	l.mu.Unlock()
}

func (l *lostLeases) end() {
	l.mu.Lock()
	l.others--
	l.mu.Unlock()
}

// answered records a call's reply and reports whether lost leases are to
// be looked for.
func (l *lostLeases) answered(r popReply) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastOK = max(l.lastOK, r.now)
	if !l.open {
		return false
	}
	// leased by an answered call: this worker runs them
	for _, t := range r.tasks {
		l.known[t.id] = true
	}
	return true
}

// lost records a call that failed, which Redis may have run all the same.
func (l *lostLeases) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open {
		l.open, l.after, l.known = true, l.lastOK, map[string]bool{}
	}
}

// maxLeaseScan bounds the leases one look-up reads.
const maxLeaseScan = 100_000

// recoverLost finds the tasks p's lost calls leased to this worker and
// requeues them at the head of their queue, as a graceful shutdown does:
// they never started, so they cost no attempt. Leases started in the same
// millisecond as the last answered call are not told apart from it and
// are left to the reaper.
func (s *Engine) recoverLost(ctx context.Context, p *part) {
	p.lost.mu.Lock()
	after, others, begun := p.lost.after, p.lost.others, p.lost.begun
	p.lost.mu.Unlock()
	if others > 0 {
		return // another fetcher's pop of p is on its way: look later
	}
	res, err := script.LeasesOf.Run(ctx, s.rdb, []string{p.k.Active(), p.k.State()}, s.cfg.WorkerID, after, maxLeaseScan).Slice()
	if err != nil {
		s.logRedisError("look for leases of a lost reply", err) // again after the next answered call
		return
	}
	p.lost.mu.Lock()
	if p.lost.begun != begun {
		p.lost.mu.Unlock()
		return // a pop by another fetcher may have leased what we found: look later
	}
	known := p.lost.known
	p.lost.open, p.lost.known = false, nil
	p.lost.mu.Unlock()
	n := 0
	for i := 0; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		token, _ := res[i+1].(int64)
		if id == "" || known[id] {
			continue
		}
		s.finish(outcome{p: p, id: id, token: token, kind: outcomeRequeue})
		n++
	}
	if n > 0 {
		s.log.Warn("a reply that never came back had leased tasks to this worker; they go back to their queue without costing an attempt",
			"queue", p.queue, "partition", p.index, "tasks", n)
	}
}
