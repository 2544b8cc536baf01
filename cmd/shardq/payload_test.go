package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// The three shapes a handler's payload struct takes. Field names differ
// from the keys, so only the tags (or, untagged, the names) can match.
type (
	jsonTagged struct {
		Recipient string `json:"to"`
		Count     int    `json:"n"`
	}
	msgpackTagged struct {
		Recipient string `msgpack:"to"`
		Count     int    `msgpack:"n"`
	}
	untagged struct {
		To string
		N  int
	}
)

// TestPayloadMatrix enqueues one task per (source, target) pair, the
// sources being the CLI's --json, raw JSON from another language and a Go
// producer's msgpack, and runs them through worker.Typed on a real worker:
// every handler sees the values sent. A msgpack map keyed as the JSON is,
// as producers in other languages write it, fills a struct by its json
// tags (issue 44). Payloads that fit no field of the
// target (JSON keyed for another struct, a msgpack map with foreign keys)
// go to dead with queue.ErrPayloadMismatch, their handler never called:
// this once ran with empty fields and was marked done.
func TestPayloadMatrix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	insp := inspector(t, srv)

	const sentJSON = `{"to": "x@y", "n": 7}`
	targets := []string{"json", "msgpack", "none"}
	goValue := map[string]any{
		"json":    jsonTagged{Recipient: "x@y", Count: 7},
		"msgpack": msgpackTagged{Recipient: "x@y", Count: 7},
		"none":    untagged{To: "x@y", N: 7},
	}
	ids := map[string]string{} // "source/target" -> task ID
	for _, target := range targets {
		// the CLI, as a user types it
		typ := "cli/" + target
		code, out, errOut := run(t, redisEnv(srv), "enqueue", "--type", typ, "--json", "--payload", sentJSON)
		if code != exitOK {
			t.Fatalf("enqueue %s: exit %d: %s", typ, code, errOut)
		}
		ids[typ] = enqueued(t, out)[0][0]
		// raw JSON, as a producer in another language writes it
		typ = "raw/" + target
		info, err := client.Enqueue(ctx, queue.NewRawTask(typ, []byte(sentJSON)))
		must(t, err)
		ids[typ] = info.ID
		// a Go producer's own struct, msgpack-encoded
		typ = "go/" + target
		task, err := queue.NewTask(typ, goValue[target])
		must(t, err)
		info, err = client.Enqueue(ctx, task)
		must(t, err)
		ids[typ] = info.ID
	}
	// payloads that fit nothing of their target
	unfit := map[string]*queue.Task{}
	unfit["raw/json"] = queue.NewRawTask("unfit/json", []byte(`{"recipient": "x@y", "count": 7}`))
	unfit["go/json"], err = queue.NewTask("unfit/go", map[string]any{"recipient": "x@y", "count": 7})
	must(t, err)
	// a map keyed by the json tags, as a Python or TypeScript producer's
	task, err := queue.NewTask("map/json", map[string]any{"to": "x@y", "n": 7})
	must(t, err)
	info, err := client.Enqueue(ctx, task)
	must(t, err)
	ids["map/json"] = info.ID
	for name, task := range unfit {
		info, err := client.Enqueue(ctx, task)
		must(t, err)
		ids["unfit:"+name] = info.ID
	}

	var mu sync.Mutex
	got := map[string][2]any{} // task type -> (recipient, count)
	record := func(typ string, to string, n int) {
		mu.Lock()
		got[typ] = [2]any{to, n}
		mu.Unlock()
	}
	mux := worker.NewMux()
	for _, src := range []string{"cli", "raw", "go"} {
		mux.Handle(src+"/json", worker.Typed(func(_ context.Context, t *worker.Task, p jsonTagged) error {
			record(t.Type, p.Recipient, p.Count)
			return nil
		}))
		mux.Handle(src+"/msgpack", worker.Typed(func(_ context.Context, t *worker.Task, p msgpackTagged) error {
			record(t.Type, p.Recipient, p.Count)
			return nil
		}))
		mux.Handle(src+"/none", worker.Typed(func(_ context.Context, t *worker.Task, p untagged) error {
			record(t.Type, p.To, p.N)
			return nil
		}))
	}
	mux.Handle("map/json", worker.Typed(func(_ context.Context, t *worker.Task, p jsonTagged) error {
		record(t.Type, p.Recipient, p.Count)
		return nil
	}))
	mux.Handle("unfit/json", worker.Typed(func(_ context.Context, t *worker.Task, p jsonTagged) error {
		record(t.Type, p.Recipient, p.Count)
		return nil
	}))
	mux.Handle("unfit/go", worker.Typed(func(_ context.Context, t *worker.Task, p jsonTagged) error {
		record(t.Type, p.Recipient, p.Count)
		return nil
	}))
	srvW, err := worker.NewServer(rdb, worker.Config{Config: cfg, Concurrency: 4}, mux)
	must(t, err)
	must(t, srvW.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srvW.Shutdown(sctx)
	})

	want := 0
	for key, id := range ids {
		if name, ok := strings.CutPrefix(key, "unfit:"); ok {
			ti := waitState(t, insp, "default", id, queue.StateDead)
			if !strings.Contains(ti.LastError, queue.ErrPayloadMismatch.Error()) {
				t.Errorf("%s: dead with error %q, want %q", name, ti.LastError, queue.ErrPayloadMismatch)
			}
			continue
		}
		want++
	}
	waitUntil(t, 15*time.Second, "every fitting payload handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= want
	})
	mu.Lock()
	defer mu.Unlock()
	for key := range ids {
		if _, ok := strings.CutPrefix(key, "unfit:"); ok {
			continue
		}
		if v := got[key]; v != [2]any{"x@y", 7} {
			t.Errorf("%s: handler saw %v, want [x@y 7]", key, v)
		}
	}
	for _, typ := range []string{"unfit/json", "unfit/go"} {
		if v, ok := got[typ]; ok {
			t.Errorf("%s: handler called with %v; a payload that fits nothing must not reach it", typ, v)
		}
	}
}
