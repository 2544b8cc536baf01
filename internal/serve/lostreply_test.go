package serve

import (
	"context"
	"testing"

	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/queue"
)

// TestLeasesOf runs the look-up script: it returns exactly the tasks of
// the partition leased to the worker named, after the time given, with
// their tokens.
func TestLeasesOf(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueN(t, b, 6, queue.In("q"))
	a, pa := unstarted(t, b, succeed)
	other, po := unstarted(t, b, succeed)
	first, err := a.dequeue(ctx, pa, 2, 0, false)
	must(t, err)
	popN(t, other, po, 2) // another worker's leases
	later := popN(t, a, pa, 2)

	leasesOf := func(worker string, after int64) map[string]int64 {
		res, err := script.LeasesOf.Run(ctx, b.rdb, []string{pa.k.Active(), pa.k.State()}, worker, after, 1000).Slice()
		must(t, err)
		got := map[string]int64{}
		for i := 0; i+1 < len(res); i += 2 {
			got[res[i].(string)] = res[i+1].(int64)
		}
		return got
	}
	all := leasesOf(a.cfg.WorkerID, 0)
	if len(all) != 4 {
		t.Fatalf("worker a holds 4 leases, the script found %v", all)
	}
	for _, l := range append(first.tasks, later...) {
		if tok, ok := all[l.id]; !ok || tok != l.token {
			t.Fatalf("lease %s (token %d) found as %v", l.id, l.token, all)
		}
	}
	// leases started after the first call's time: the later ones only (a
	// lease in the same millisecond as the first is left out by design)
	got := leasesOf(a.cfg.WorkerID, first.now)
	for _, l := range first.tasks {
		if _, ok := got[l.id]; ok {
			t.Fatalf("a lease of the answered call at %d was returned: %v", first.now, got)
		}
	}
	if len(got) > 2 {
		t.Fatalf("after %d: %v, want at most the 2 later leases", first.now, got)
	}
	if n := len(leasesOf("nobody", 0)); n != 0 {
		t.Fatalf("a worker with no leases has %d", n)
	}
}

// TestLostLeasesSparePopsInFlight: under strict priority another fetcher
// may pop a partition while that partition's fetcher looks for the leases
// of a lost reply. The look-up must not take the other pop's tasks, not
// yet known here, for lost ones and requeue them while they run.
func TestLostLeasesSparePopsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	enqueueN(t, b, 4, queue.In("q"))
	s, p := unstarted(t, b, succeed)
	p.lost.lost() // a reply of p's fetcher was lost

	// another fetcher's pop (popHigher) runs in Redis; its reply is on
	// its way when p's fetcher gets an answer and looks up its leases
	p.lost.begin()
	other, err := s.pop(ctx, p, 2)
	must(t, err)
	mine, err := s.dequeue(ctx, p, 1, 0, false)
	must(t, err)
	if !p.lost.answered(mine) {
		t.Fatal("the answered call did not ask for a look-up")
	}
	s.recoverLost(ctx, p)
	p.lost.answered(other)
	p.lost.end()
	if out := s.outbox.Take(100); len(out) != 0 {
		t.Fatalf("the look-up requeued %d tasks while another pop's reply was on its way: %+v", len(out), out)
	}
	// later, with nothing in flight, the look-up runs, and finds the
	// other pop's tasks known
	again, err := s.dequeue(ctx, p, 1, 0, false)
	must(t, err)
	if !p.lost.answered(again) {
		t.Fatal("the window closed without a look-up")
	}
	s.recoverLost(ctx, p)
	if out := s.outbox.Take(100); len(out) != 0 {
		t.Fatalf("the look-up requeued tasks of an answered pop: %+v", out)
	}
	p.lost.mu.Lock()
	defer p.lost.mu.Unlock()
	if p.lost.open {
		t.Fatal("the window is still open after a clean look-up")
	}
}
