package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// TestGroupsSplitLeased: a worker of two slots, both blocked, holds tasks
// of two groups leased ahead of its free slots (as quick handlers before
// them let it prefetch). `get groups` and
// `describe group` show each group's running handlers and its tasks
// ahead apart, as the worker's heartbeat reports them, in the table and
// in JSON.
func TestGroupsSplitLeased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	insp := inspector(t, srv)
	f := &fixture{srv: srv, env: env, insp: insp}
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	must(t, err)
	var tasks []*queue.Task
	for j := range 60 { // quick ones first: a worker prefetches behind them
		tasks = append(tasks, queue.NewRawTask("quick", nil, queue.Group([]string{"acme", "globex"}[j%2])))
	}
	for j := range 20 {
		tasks = append(tasks, queue.NewRawTask("hold", fmt.Appendf(nil, "%d", j), queue.Group([]string{"acme", "globex"}[j%2])))
	}
	_, err = client.EnqueueMany(ctx, tasks, queue.In("tenants"))
	must(t, err)
	release := make(chan struct{})
	cfg := worker.Config{Queues: map[string]int{"tenants": 1}, Concurrency: 2, Prefetch: 6,
		Heartbeat: 100 * time.Millisecond, WorkerID: "w-split"}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := worker.NewServer(srv.Client(t), cfg, worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		if task.Type == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}))
	must(t, err)
	must(t, w.Start(ctx))
	t.Cleanup(func() {
		close(release)
		_ = w.Shutdown(context.Background())
	})

	// read the CLI beside the heartbeat until both agree: a fetcher may
	// still lease ahead meanwhile
	var byGroup map[string]int
	var page struct {
		Groups []groupJSON `json:"groups"`
	}
	waitUntil(t, 30*time.Second, "get groups to split running and ahead as the worker reports", func() bool {
		ws, err := insp.Workers(ctx)
		must(t, err)
		ahead := 0
		for _, wi := range ws {
			if wi.ID == "w-split" && wi.Busy == 2 {
				byGroup, ahead = wi.Work["tenants"].AheadGroups, wi.Work["tenants"].Ahead
			}
		}
		if ahead == 0 {
			return false
		}
		page.Groups = nil
		f.jsonOut(t, &page, "get", "groups", "--queue", "tenants")
		running, seen := int64(0), int64(0)
		for _, g := range page.Groups {
			if g.Ahead != int64(byGroup[g.Group]) {
				return false
			}
			running, seen = running+g.Running, seen+g.Ahead
		}
		return running == 2 && seen == int64(ahead)
	})
	_, out, _ := run(t, env, "get", "groups", "--queue", "tenants")
	if !strings.Contains(out, "RUNNING") || !strings.Contains(out, "AHEAD") {
		t.Fatalf("get groups reads:\n%s", out)
	}
	fits(t, "get groups", out)

	for _, g := range page.Groups {
		var v groupJSON
		waitUntil(t, 30*time.Second, "describe group "+g.Group+" to split its leased tasks", func() bool {
			f.jsonOut(t, &v, "describe", "group", g.Group, "--queue", "tenants")
			gi, err := insp.GetGroup(ctx, "tenants", g.Group)
			must(t, err)
			return v.Running+v.Ahead == gi.Running
		})
	}
	_, out, _ = run(t, env, "describe", "group", "acme", "--queue", "tenants")
	if !strings.Contains(out, "Ahead") || !strings.Contains(out, "leased ahead") {
		t.Fatalf("describe group reads:\n%s", out)
	}
}
