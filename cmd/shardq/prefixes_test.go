package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestPrefixWithoutQueues: every command against a key prefix with no
// queues says so on stderr and names the prefixes that have some; reads
// and actions exit 1 with nothing on stdout, enqueue warns and enqueues.
func TestPrefixWithoutQueues(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ctx := context.Background()
	for _, p := range []string{"app1", "app2"} {
		c, err := queue.NewClient(srv.Client(t), queue.Config{Prefix: p})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("email")); err != nil {
			t.Fatal(err)
		}
	}
	// neither is a registry: a string, and a hash-tagged key
	srv.Client(t).Set(ctx, "cache:queues", "x", 0)
	srv.Client(t).HSet(ctx, "{app3:q:0}:queues", "a", "1")

	const want = `no queues under key prefix "shardq"; prefixes with queues: app1, app2 (pass one with --prefix)`
	for _, args := range [][]string{
		{"stats"},
		{"get", "queues"},
		{"get", "tasks", "--queue", "email"},
		{"get", "groups", "--queue", "email"},
		{"get", "workers"},
		{"get", "workflows"},
		{"get", "schedules"},
		{"describe", "queue", "email"},
		{"describe", "task", "x", "--queue", "email"},
		{"describe", "workflow", "x"},
		{"partitions", "--queue", "email"},
		{"run", "--queue", "email", "x"},
		{"delete", "--queue", "email", "--state", "dead", "--yes"},
		{"cancel", "--queue", "email", "x"},
		{"pause", "--queue", "email"},
		{"weight", "--queue", "email", "--group", "g"},
		{"delete-queue", "--queue", "email", "--yes"},
	} {
		code, out, errOut := run(t, env, args...)
		if code != exitFailure || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("shardq %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	code, out, errOut := run(t, env, "enqueue", "--prefix", "app", "--type", "t", "--payload", "x")
	if code != exitOK || !strings.HasSuffix(out, " pending\n") ||
		!strings.Contains(errOut, `warning: no queues under key prefix "app"; prefixes with queues: app1, app2`) {
		t.Fatalf("enqueue: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// with a queue now, the prefix reads as any other
	if code, _, errOut := run(t, env, "get", "queues", "--prefix", "app"); code != exitOK {
		t.Fatalf("get queues --prefix app: exit %d, %s", code, errOut)
	}
}

// TestPrefixNoQueuesAnywhere: on a Redis with no queues at all, a read
// says nothing was enqueued yet, and enqueue does not warn.
func TestPrefixNoQueuesAnywhere(t *testing.T) {
	t.Parallel()
	env := redisEnv(redistest.Start(t))
	code, _, errOut := run(t, env, "get", "queues", "-o", "json")
	if code != exitFailure || !strings.Contains(errOut, `no queues under key prefix "shardq", nor under any other prefix: nothing was enqueued and no worker ran yet`) {
		t.Fatalf("get queues: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, env, "enqueue", "--type", "t", "--payload", "x"); code != exitOK || errOut != "" {
		t.Fatalf("enqueue: exit %d, stderr %q", code, errOut)
	}
}

// TestFindPrefixesBounded: the search stops at maxPrefixes and says
// others may exist; on a cluster it reads every master.
func TestFindPrefixesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	for i := range maxPrefixes + 5 {
		rdb.HSet(ctx, fmt.Sprintf("p%02d:queues", i), "q", "1")
	}
	scan, err := findPrefixes(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.prefixes) != maxPrefixes || scan.complete {
		t.Fatalf("found %d prefixes, complete %v; want %d and incomplete", len(scan.prefixes), scan.complete, maxPrefixes)
	}
	if msg := (&errNoQueues{prefix: "x", scan: scan}).Error(); !strings.Contains(msg, "p00, p01") || !strings.Contains(msg, "maybe others this search did not list") {
		t.Fatalf("message %q", msg)
	}

	cl := redistest.StartCluster(t, 3)
	crdb := cl.Client(t)
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} // over the three masters' slots
	for _, p := range names {
		if err := crdb.HSet(ctx, p+":queues", "q", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	scan, err = findPrefixes(ctx, crdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.prefixes) != len(names) || !scan.complete {
		t.Fatalf("cluster: found %v (complete %v), want all of %v", scan.prefixes, scan.complete, names)
	}
}

// TestServersWarnOfPrefix: a dashboard and a worker started on a prefix
// with no queues, while another has some, warn and run. (The dashboard
// first: the worker registers its queue, after which none warns.)
func TestServersWarnOfPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	c, err := queue.NewClient(srv.Client(t), queue.Config{Prefix: "app1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(context.Background(), queue.NewRawTask("t", nil)); err != nil {
		t.Fatal(err)
	}
	const want = `warning: no queues under key prefix "shardq"; prefixes with queues: app1`
	insp := inspector(t, srv)
	for _, c := range []struct {
		args []string
		up   func(p *proc) bool
	}{
		{[]string{"dashboard", "--addr", "127.0.0.1:0"}, func(p *proc) bool { return strings.Contains(p.stdout.String(), "dashboard on") }},
		{[]string{"worker", "--handler", "t=exec:true"}, func(*proc) bool { // it registered its queue
			qs, _ := insp.Queues(context.Background())
			return len(qs) == 1
		}},
	} {
		args := c.args
		p := startShardq(t, env, args...)
		waitUntil(t, 15*time.Second, args[0]+" to start", func() bool { return c.up(p) })
		if !strings.Contains(p.err.String(), want) {
			t.Errorf("%s: no warning in:\n%s", args[0], p.err.String())
		}
		if code := p.stop(t); code != exitOK {
			t.Errorf("%s: exit %d\n%s", args[0], code, p.err.String())
		}
	}
}
