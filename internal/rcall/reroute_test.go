package rcall

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
)

// TestStale: which errors make Reroute reload a cluster's slot map. The
// server errors are real answers of a replica and a master.
func TestStale(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t)
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port)))
	ctx := context.Background()
	readOnly := replica.Client(t).Set(ctx, "k", "v", 0).Err()
	unknown := master.Client(t).Do(ctx, "NOSUCHCOMMAND").Err()
	nilReply := master.Client(t).Get(ctx, "missing").Err()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"redis.Nil", nilReply, false},
		{"cancelled", context.Canceled, false},
		{"wrapped cancel", fmt.Errorf("pop: %w", context.Canceled), false},
		{"unknown command", unknown, false},
		{"READONLY", readOnly, true},
		{"EOF", io.EOF, true},
		{"refused", &net.OpError{Op: "dial", Err: fmt.Errorf("connection refused")}, true},
		{"deadline", context.DeadlineExceeded, true},
	} {
		if got := stale(tc.err); got != tc.want {
			t.Errorf("stale(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	// not a cluster client: nothing to reload, nothing happens
	Reroute(master.Client(t), io.EOF)
}

// TestRerouteHook: the hook passes commands and their errors through.
func TestRerouteHook(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = cc.Close() })
	cc.AddHook(RerouteHook{Client: cc})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Do(ctx, "NOSUCHCOMMAND")
		return nil
	}); err == nil {
		t.Fatal("a pipeline with an unknown command succeeded")
	}
	if v := cc.Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("GET k = %q, want v", v)
	}
}
