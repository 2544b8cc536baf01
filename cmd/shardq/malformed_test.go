package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestMsgpackToJSONBounded: the conversion --json makes refuses msgpack
// whose headers claim more than its bytes hold, naming the length; it
// once decoded them into any and ended the worker.
func TestMsgpackToJSONBounded(t *testing.T) {
	for want, b := range map[string][]byte{
		"claims 4294967295 elements": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"claims 4294967295 entries":  {0xdf, 0xff, 0xff, 0xff, 0xff},
		"claims 4294967295 bytes":    {0xc6, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, err := msgpackToJSON(b); !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("msgpackToJSON(% x) = %v, want ErrMalformed naming %q", b, err, want)
		}
	}
}

// TestWorkerJSONPoisoned: `shardq worker --json` sends a task whose
// msgpack payload claims 2^32-1 elements to dead with why, runs the
// tasks around it, and stops cleanly; before, converting it to JSON
// ended the process with every task it ran.
func TestWorkerJSONPoisoned(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	insp := inspector(t, srv)
	rdb := srv.Client(t)
	client, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(payload any) string {
		task, err := queue.NewTask("j", payload, queue.Retention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		info, err := client.Enqueue(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		return info.ID
	}
	before := enqueue(map[string]int{"n": 1})
	// queue.NewTask refuses such bytes: written in Redis before the worker
	// starts, as a producer outside Go could leave them
	poisoned := enqueue("placeholder")
	redistest.SetPayload(t, rdb, config.DefaultPrefix, queue.DefaultQueue, poisoned, []byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	after := enqueue(map[string]int{"n": 2})
	p := startShardq(t, redisEnv(srv), "worker", "--json", "--handler", "j=exec:cat")
	ti := waitState(t, insp, "default", poisoned, queue.StateDead)
	if !ti.Malformed || !strings.Contains(ti.LastError, "array at byte 0 claims 4294967295 elements") {
		t.Errorf("the poisoned task: malformed %v, last error %q", ti.Malformed, ti.LastError)
	}
	waitState(t, insp, "default", before, queue.StateSucceeded)
	waitState(t, insp, "default", after, queue.StateSucceeded)
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
}
