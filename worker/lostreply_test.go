package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/shardq/shardq/lua"
	"github.com/shardq/shardq/queue"
)

// TestLeasesOf runs the look-up script: it returns exactly the tasks of
// the partition leased to the worker named, after the time given, with
// their tokens.
func TestLeasesOf(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i := range 6 {
		b.enqueue(t, queue.NewRawTask("t", []byte(fmt.Sprint(i))), queue.In("q"))
	}
	a, pa := unstarted(t, b, HandlerFunc(func(context.Context, *Task) error { return nil }))
	other, po := unstarted(t, b, HandlerFunc(func(context.Context, *Task) error { return nil }))
	first, err := a.dequeue(ctx, pa, 2, false)
	must(t, err)
	popN(t, other, po, 2) // another worker's leases
	later := popN(t, a, pa, 2)

	leasesOf := func(worker string, after int64) map[string]int64 {
		res, err := lua.LeasesOf.Run(ctx, b.rdb, []string{pa.k.Active(), pa.k.State()}, worker, after, 1000).Slice()
		must(t, err)
		got := map[string]int64{}
		for i := 0; i+1 < len(res); i += 2 {
			got[res[i].(string)] = res[i+1].(int64)
		}
		return got
	}
	all := leasesOf(a.ID(), 0)
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
	got := leasesOf(a.ID(), first.now)
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
