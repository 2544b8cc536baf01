package main

import (
	"context"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

func TestPartitions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Enqueue(context.Background(), queue.NewRawTask("t", nil), queue.In("email")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--queue", "email"}, "email 1/1"},
		{[]string{"--queue", "email", "--set", "4"}, "email 4/4"},
		{[]string{"--queue", "email", "--set", "2"}, "email 2/4"}, // no worker: 2 and 3 stay closed, not yet drained
		{[]string{"--queue", "email"}, "email 2/4"},
		{[]string{"--queue", "email", "-o", "json"}, "{\n  \"queue\": \"email\",\n  \"route\": 2,\n  \"serve\": 4\n}"},
	} {
		code, out, errOut := run(t, env, append([]string{"partitions"}, c.args...)...)
		if code != exitOK || strings.TrimSpace(out) != c.want {
			t.Fatalf("partitions %v: exit %d, stdout %q (want %q), stderr %q", c.args, code, out, c.want, errOut)
		}
	}
}

func TestPartitionsBadInput(t *testing.T) {
	t.Parallel()
	empty := redistest.Start(t)
	runBadInput(t, "partitions", []badInput{
		{"NoQueue", nil, []string{"--set", "2"}, exitUsage, "--queue is required"},
		{"QueueName", nil, []string{"--queue", "a b"}, exitUsage, "invalid queue name"},
		{"CountTooHigh", nil, []string{"--queue", "q", "--set", "1025"}, exitUsage, "--set 1025, want 1..1024"},
		{"CountNegative", nil, []string{"--queue", "q", "--set", "-1"}, exitUsage, "--set -1"},
		{"UnknownQueue", redisEnv(empty), []string{"--queue", "nope"}, exitFailure, `no queues under key prefix "shardq"`},
		{"Help", nil, []string{"-h"}, exitOK, "route/serve"},
	})
}
