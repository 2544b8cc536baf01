package queue

import (
	"context"
	"testing"
)

// TestListTasksFilters: ListTasks with filters finds by type (exact and
// prefix), by ID prefix and by group, alone or together; bounded scans go on from their marker and
// never miss a match; without a filter it lists the page as it did.
func TestListTasksFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	var mail []string
	for i := range 30 {
		typ := "report"
		if i%3 == 0 {
			typ = "email:send"
		}
		info, err := b.client.Enqueue(ctx, NewRawTask(typ, nil), In("s"))
		must(t, err)
		if typ == "email:send" {
			mail = append(mail, info.ID)
		}
	}
	got := func(r *TaskPage) map[string]bool {
		m := map[string]bool{}
		for _, ti := range r.Tasks {
			m[ti.ID] = true
		}
		return m
	}
	r, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Type: "email:send"})
	must(t, err)
	if len(r.Tasks) != 10 || r.Next != "" || r.Scanned != 30 {
		t.Fatalf("by type: %d tasks, scanned %d, next %q", len(r.Tasks), r.Scanned, r.Next)
	}
	r, err = b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Type: "email:*"})
	must(t, err)
	if len(r.Tasks) != 10 {
		t.Fatalf("by type prefix: %d", len(r.Tasks))
	}
	// a bounded scan: 7 at a time, followed to the end, finds all ten once
	seen := map[string]int{}
	next := ""
	for calls := 0; ; calls++ {
		r, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Type: "email:send", Scan: 7, After: next})
		must(t, err)
		if r.Scanned > 7 {
			t.Fatalf("scanned %d, bound 7", r.Scanned)
		}
		for _, ti := range r.Tasks {
			seen[ti.ID]++
		}
		if r.Next == "" || calls > 10 {
			break
		}
		next = r.Next
	}
	for _, id := range mail {
		if seen[id] != 1 {
			t.Fatalf("task %s seen %d times over the bounded scans", id, seen[id])
		}
	}
	// a limit stops mid-page and the marker goes on after the last match
	r1, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Type: "email:send", Limit: 4})
	must(t, err)
	r2, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Type: "email:send", Limit: 100, After: r1.Next})
	must(t, err)
	if len(r1.Tasks) != 4 || len(r2.Tasks) != 6 {
		t.Fatalf("limit 4 then the rest: %d + %d", len(r1.Tasks), len(r2.Tasks))
	}
	// by ID prefix
	r, err = b.insp.ListTasks(ctx, TaskQuery{Queue: "s", IDPrefix: mail[0][:30]})
	must(t, err)
	if !got(r)[mail[0]] {
		t.Fatalf("by ID prefix %q: %v", mail[0][:30], got(r))
	}
	// by group, alone and with a type: the pending list read from its
	// head, a limit and its marker going on to the rest
	var acme []string
	for i := range 9 {
		typ := []string{"email:send", "report", "report"}[i%3]
		info, err := b.client.Enqueue(ctx, NewRawTask(typ, nil), In("s"), Group([]string{"acme", "globex", "initech"}[i%3]))
		must(t, err)
		if i%3 == 0 {
			acme = append(acme, info.ID)
		}
	}
	g1, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", State: StatePending, Group: "acme", Limit: 2})
	must(t, err)
	g2, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", State: StatePending, Group: "acme", After: g1.Next})
	must(t, err)
	if len(g1.Tasks) != 2 || g1.Next == "" || len(g2.Tasks) != 1 || g2.Next != "" ||
		g1.Tasks[0].ID != acme[0] || g1.Tasks[1].ID != acme[1] || g2.Tasks[0].ID != acme[2] {
		t.Fatalf("by group acme: %+v then %+v, want %v in order", got(g1), got(g2), acme)
	}
	r, err = b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Group: "globex", Type: "email:send"})
	must(t, err)
	if len(r.Tasks) != 0 {
		t.Fatalf("group globex and type email:send: %v, want none (globex's are reports)", got(r))
	}
	r, err = b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Group: "initech", Type: "report"})
	must(t, err)
	if len(r.Tasks) != 3 || r.Tasks[0].Group != "initech" {
		t.Fatalf("group initech and type report: %d tasks", len(r.Tasks))
	}
	// (the error-text search runs over a real worker's dead and retrying
	// tasks in dashboard.TestSearchPage)
	if r, err := b.insp.ListTasks(ctx, TaskQuery{Queue: "s", Limit: 100}); err != nil || len(r.Tasks) != 39 || r.Scanned != 0 {
		t.Fatalf("no filter: %v, %+v; want a page of all 39, no scan", err, r)
	}
}
