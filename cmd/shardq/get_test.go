package main

import (
	"slices"
	"strings"
	"testing"
)

// TestGet lists each kind with --output json, and as a table that fits 80
// columns, against one fixture.
func TestGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	ids := func(tasks []taskJSON) []string {
		var out []string
		for _, ti := range tasks {
			out = append(out, ti.ID)
		}
		slices.Sort(out)
		return out
	}
	t.Run("Queues", func(t *testing.T) {
		t.Parallel()
		var page queuePage
		f.jsonOut(t, &page, "get", "queues")
		qs := page.Queues
		got := map[string]queueJSON{}
		for _, q := range qs {
			got[q.Name] = q
		}
		if e, w := got["email"], got["work"]; e.Pending != 3 || e.Scheduled != 1 || w.Dead != 1 || w.Retry != 1 ||
			w.Active != 1 || w.Succeeded != 1 || got["chain"].Pending != 1 {
			t.Fatalf("got %+v", qs)
		}
		for _, c := range []struct {
			args []string
			want []string
			next string
		}{
			{[]string{"email"}, []string{"email"}, ""},
			{[]string{"w*", "chain"}, []string{"chain", "work"}, ""},
			{[]string{"--limit", "2"}, []string{"chain", "email"}, "email"},
			{[]string{"--limit", "2", "--after", "email"}, []string{"work"}, ""},
		} {
			var p queuePage
			f.jsonOut(t, &p, append([]string{"get", "queues"}, c.args...)...)
			var names []string
			for _, q := range p.Queues {
				names = append(names, q.Name)
			}
			if !slices.Equal(names, c.want) || p.Next != c.next {
				t.Errorf("get queues %v: %v next %q, want %v next %q", c.args, names, p.Next, c.want, c.next)
			}
		}
	})
	t.Run("Tasks", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"--queue", "email"}, []string{"p-1", "p-2", "p-3"}},
			{[]string{"--queue", "email", "--state", "scheduled"}, []string{"s-1"}},
			{[]string{"--queue", "email", "--group", "acme"}, []string{"p-1", "p-2"}},
			{[]string{"--queue", "email", "--type", "email:*"}, []string{"p-1", "p-2", "s-1"}}, // the recent feed
			{[]string{"--queue", "email", "--id-prefix", "p-", "--state", "pending"}, []string{"p-1", "p-2", "p-3"}},
			{[]string{"--queue", "work", "--state", "dead", "--error", "BOOM"}, []string{"d-1"}},
			{[]string{"--queue", "work", "--state", "retry"}, []string{"r-1"}},
			{[]string{"--queue", "work", "--state", "active"}, []string{"a-1"}},
			{[]string{"--queue", "work", "--state", "succeeded"}, []string{"ok-1"}},
		} {
			var page taskPage
			f.jsonOut(t, &page, append([]string{"get", "tasks"}, c.args...)...)
			if got := ids(page.Tasks); !slices.Equal(got, c.want) {
				t.Errorf("get tasks %v: %v, want %v", c.args, got, c.want)
			}
		}
		var page taskPage
		f.jsonOut(t, &page, "get", "tasks", "--queue", "email", "--limit", "2")
		if len(page.Tasks) != 2 || page.Next == "" {
			t.Fatalf("--limit 2: %+v", page)
		}
		var second taskPage // decoding into page again would reuse its slice
		f.jsonOut(t, &second, "get", "tasks", "--queue", "email", "--limit", "2", "--after", page.Next)
		if got := ids(append(page.Tasks, second.Tasks...)); !slices.Equal(got, []string{"p-1", "p-2", "p-3"}) {
			t.Fatalf("two pages of 2: %v, want the three tasks once each", got)
		}
		code, out, errOut := run(t, f.env, "get", "tasks", "--queue", "work", "--state", "recent")
		if code != exitOK || strings.Count(out, "\n") != 5 || !strings.Contains(out, "STATE") {
			t.Fatalf("table: exit %d\n%s%s", code, out, errOut)
		}
		fits(t, "get tasks", out)
	})
	t.Run("Workers", func(t *testing.T) {
		t.Parallel()
		var ws []workerJSON
		f.jsonOut(t, &ws, "get", "workers")
		if len(ws) != 1 || ws[0].Busy != 1 || len(ws[0].Tasks) != 1 || ws[0].Tasks[0].ID != "a-1" || ws[0].Queues["work"] != 1 {
			t.Fatalf("got %+v", ws)
		}
		_, out, _ := run(t, f.env, "get", "workers")
		fits(t, "get workers", out)
	})
	t.Run("Groups", func(t *testing.T) {
		t.Parallel()
		var page struct {
			Groups []groupJSON `json:"groups"`
		}
		f.jsonOut(t, &page, "get", "groups", "--queue", "email")
		if len(page.Groups) != 1 || page.Groups[0].Group != "acme" || page.Groups[0].Waiting != 2 || page.Groups[0].Weight != 1 {
			t.Fatalf("got %+v", page)
		}
	})
	t.Run("Workflows", func(t *testing.T) {
		t.Parallel()
		var wfs []workflowJSON
		f.jsonOut(t, &wfs, "get", "workflows")
		if len(wfs) != 1 || wfs[0].ID != f.wf || wfs[0].Kind != "workflow" || wfs[0].State != "active" || wfs[0].Total != 2 {
			t.Fatalf("got %+v", wfs)
		}
		_, out, _ := run(t, f.env, "get", "workflows")
		fits(t, "get workflows", out)
	})
	t.Run("Schedules", func(t *testing.T) {
		t.Parallel()
		var ss []scheduleJSON
		f.jsonOut(t, &ss, "get", "schedules")
		if len(ss) != 1 || ss[0].Name != "nightly" || ss[0].Queue != "email" || ss[0].Spec != "@every 1h" {
			t.Fatalf("got %+v", ss)
		}
	})
}

func TestGetBadInput(t *testing.T) {
	t.Parallel()
	runBadInput(t, "get", []badInput{
		{"NoKind", nil, nil, exitUsage, "name a kind: groups, queues, schedules, tasks, workers, workflows"},
		{"UnknownKind", nil, []string{"pods"}, exitUsage, `unknown kind "pods"`},
		{"NoQueue", nil, []string{"tasks"}, exitUsage, "--queue is required"},
		{"FlagOfAnotherKind", nil, []string{"queues", "--state", "dead"}, exitUsage, "--state does not apply to get queues"},
		{"BadState", nil, []string{"tasks", "--queue", "q", "--state", "done"}, exitUsage, `--state "done", want one of pending`},
		{"BadOutput", nil, []string{"queues", "-o", "yaml"}, exitUsage, `--output "yaml": want table or json`},
		{"BadLimit", nil, []string{"workflows", "--limit", "101"}, exitUsage, "--limit 101, want 1..100"},
		{"JSONFlag", nil, []string{"queues", "--json"}, exitUsage, "-json (did you mean --output?)"},
		{"Help", nil, []string{"-h"}, exitOK, "Kinds:"},
	})
	// refused by the Inspector, not by the flags: a usage error all the same
	runBadInput(t, "get", []badInput{
		{"PendingNewest", newFixture(t, false).env, []string{"tasks", "--queue", "email", "--order", "newest"}, exitUsage, "pending tasks page from the head only"},
	})
}
