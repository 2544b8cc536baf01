package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/sampledoc"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// ringOf returns a key ring whose current key is the first ID, each key 32
// bytes derived from its ID.
func ringOf(ids ...string) *queue.KeyRing {
	r := &queue.KeyRing{Current: ids[0], Keys: map[string][]byte{}}
	for _, id := range ids {
		r.Keys[id] = bytes.Repeat([]byte(id[len(id)-1:]), 32)
	}
	return r
}

// with returns a client and an inspector over the bundle's Redis and
// prefix whose config mod changed, and that config.
func (b *bundle) with(t *testing.T, mod func(*queue.Config)) (*queue.Client, *queue.Inspector, queue.Config) {
	t.Helper()
	cfg := b.qcfg
	mod(&cfg)
	c, err := queue.NewClient(b.rdb, cfg)
	must(t, err)
	i, err := queue.NewInspector(b.rdb, cfg)
	must(t, err)
	return c, i, cfg
}

// serverWith starts a worker whose queue config is cfg.
func (b *bundle) serverWith(t *testing.T, cfg queue.Config, h Handler) *Server {
	t.Helper()
	cfg.Logger = testLogger(t)
	return startServer(t, b.rdb, Config{Config: cfg}, h)
}

// pendingBytes returns the stored messages of the default queue's pending
// list.
func (b *bundle) pendingBytes(t *testing.T) []string {
	t.Helper()
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	msgs, err := b.rdb.LRange(context.Background(), k.ShardPrefix()+"0", 0, -1).Result()
	must(t, err)
	return msgs
}

// TestCompressedRoundTrip: with each compression a producer may choose,
// a 1 KB JSON payload is stored in fewer bytes, a worker of another
// setting runs it with the original bytes, and its result comes back
// whole through GetTask, though stored compressed. A payload under
// CompressAbove, and one that opens with the envelope's own first byte,
// come back exactly.
func TestCompressedRoundTrip(t *testing.T) {
	t.Parallel()
	for i, c := range []string{"fast", "small", "none"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			client, insp, _ := b.with(t, func(cfg *queue.Config) { cfg.Compression = c })
			r := rand.New(rand.NewPCG(1, uint64(i)))
			doc := sampledoc.JSON(r)
			small := []byte(`{"n":1}`)
			magic := append([]byte{0xC1}, doc...)
			var order sampledoc.Order
			infos := map[string][]byte{}
			for _, p := range [][]byte{doc, small, magic} {
				info, err := client.Enqueue(ctx, queue.NewRawTask("doc", p), queue.Retention(time.Hour))
				must(t, err)
				infos[info.ID] = p
			}
			stored := b.pendingBytes(t)
			if len(stored) != 3 {
				t.Fatalf("%d pending messages, want 3", len(stored))
			}
			if c != "none" && len(stored[0]) >= len(doc)*3/4 {
				t.Fatalf("%v: a %d-byte document is stored in %d bytes", c, len(doc), len(stored[0]))
			}
			if c == "none" && !strings.Contains(stored[0], string(doc)) {
				t.Fatalf("none: the document is not stored as it is")
			}
			if !strings.Contains(stored[1], string(small)) {
				t.Fatalf("a payload under CompressAbove is not stored as it is")
			}
			// A worker of the other setting reads the producer's form.
			other := "small"
			if c == "small" {
				other = "none"
			}
			_, _, wcfg := b.with(t, func(cfg *queue.Config) { cfg.Compression = other })
			var mu sync.Mutex
			seen := map[string][]byte{}
			b.serverWith(t, wcfg, HandlerFunc(func(ctx context.Context, task *Task) error {
				mu.Lock()
				seen[task.ID] = task.Payload
				mu.Unlock()
				if bytes.Equal(task.Payload, doc) {
					if err := task.Decode(&order); err != nil {
						return err
					}
				}
				return task.SetResult(ctx, task.Payload)
			}))
			waitFor(t, 10*time.Second, "three tasks done", func() bool {
				qi, err := insp.QueueInfo(ctx, queue.DefaultQueue)
				return err == nil && qi.Succeeded == 3
			})
			for id, p := range infos {
				mu.Lock()
				got := seen[id]
				mu.Unlock()
				if !bytes.Equal(got, p) {
					t.Fatalf("task %s: handler saw %d bytes, want the %d enqueued", id, len(got), len(p))
				}
				ti, err := insp.GetTask(ctx, queue.DefaultQueue, id)
				must(t, err)
				if !bytes.Equal(ti.Payload, p) || !bytes.Equal(ti.Result, p) || ti.Malformed || ti.Redacted {
					t.Fatalf("GetTask %s: payload %d bytes, result %d bytes, want %d; malformed %v, redacted %v",
						id, len(ti.Payload), len(ti.Result), len(p), ti.Malformed, ti.Redacted)
				}
			}
			if order.ID == "" || len(order.Items) == 0 {
				t.Fatalf("Decode of the compressed document: %+v", order)
			}
			res, err := b.rdb.HGet(ctx, keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0).Result(), wireID(t, insp, doc)).Result()
			must(t, err)
			if other != "none" && len(res) >= len(doc)*3/4 {
				t.Fatalf("%v: the result is stored in %d bytes of %d", other, len(res), len(doc))
			}
		})
	}
}

// wireID returns the stored ID of the done task whose payload is p.
func wireID(t *testing.T, insp *queue.Inspector, p []byte) string {
	t.Helper()
	page, err := insp.ListTasks(context.Background(), queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateSucceeded})
	must(t, err)
	for _, ti := range page.Tasks {
		if bytes.Equal(ti.Payload, p) {
			return wire.StoredID(ti.ID)
		}
	}
	t.Fatal("no done task has the payload")
	return ""
}

// TestCompressedCorrupt: a payload whose compressed body does not
// decompress goes to dead with the reason, its stored bytes kept, and the
// worker goes on.
func TestCompressedCorrupt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	doc := sampledoc.JSON(rand.New(rand.NewPCG(3, 4)))
	info := b.enqueue(t, queue.NewRawTask("doc", doc))
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	msg := b.pendingBytes(t)[0]
	// The compressed body's length prefix says more than the body holds.
	// the compact message: its header, the ID, the type "doc", then the
	// payload's envelope (a 0xC1 may also occur inside the random ID)
	at := strings.Index(msg, "\xa3doc") + 4
	if at < 4 || msg[at] != 0xC1 || msg[at+1] != 0x01 {
		t.Fatalf("the stored message holds no S2 envelope")
	}
	broken := msg[:at+2] + "\xff\xff\xff\x0f" + msg[at+6:]
	must(t, b.rdb.LSet(ctx, k.ShardPrefix()+"0", 0, broken).Err())
	good := b.enqueue(t, queue.NewRawTask("doc", doc))
	rec := newRecorder(nil)
	b.server(t, Config{}, rec)
	waitFor(t, 10*time.Second, "the broken task dead and the good one run", func() bool {
		qi, _ := b.insp.QueueInfo(ctx, queue.DefaultQueue)
		return qi.Dead == 1 && rec.count(good.ID) == 1
	})
	if rec.count(info.ID) != 0 {
		t.Fatal("the handler ran the task whose payload does not decompress")
	}
	ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	must(t, err)
	if ti.State != queue.StateDead || !strings.Contains(ti.LastError, "does not open") || !strings.Contains(ti.LastError, "s2") {
		t.Fatalf("dead task: state %s, last error %q", ti.State, ti.LastError)
	}
	if !ti.Malformed || len(ti.Payload) == 0 {
		t.Fatalf("GetTask: malformed %v and %d payload bytes; want the stored bytes kept", ti.Malformed, len(ti.Payload))
	}
}

// TestEncryptedRoundTrip: under a key ring a payload, its result, a
// progress message, a step's value and the handler's error reach the
// handler and the Inspector as written, while no byte of Redis holds
// them in clear. An Inspector without the ring sees them redacted, with
// the key's ID.
func TestEncryptedRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const secret = "4111-1111-1111-1111"
	client, insp, cfg := b.with(t, func(c *queue.Config) { c.KeyRing, c.EncryptErrors = ringOf("k1"), true })
	payload := []byte(`{"card":"` + secret + `","note":"` + strings.Repeat("x", 600) + `"}`)
	done, failed := make(chan struct{}), make(chan struct{})
	b.serverWith(t, cfg, HandlerFunc(func(ctx context.Context, task *Task) error {
		if !bytes.Equal(task.Payload, payload) {
			return SkipRetry(fmt.Errorf("payload %q", task.Payload))
		}
		if task.Type == "fail" {
			defer close(failed)
			return SkipRetry(errors.New("declined card " + secret))
		}
		defer close(done)
		must(t, task.SetProgress(ctx, 50, "charging "+secret))
		v, err := Step(ctx, "charge", func(context.Context) (string, error) { return "receipt for " + secret, nil })
		if err != nil || v != "receipt for "+secret {
			return fmt.Errorf("step: %q, %v", v, err)
		}
		return task.SetResult(ctx, []byte("charged "+secret))
	}))
	ok, err := client.Enqueue(ctx, queue.NewRawTask("charge", payload), queue.Retention(time.Hour))
	must(t, err)
	bad, err := client.Enqueue(ctx, queue.NewRawTask("fail", payload))
	must(t, err)
	<-done
	<-failed
	waitFor(t, 10*time.Second, "one task done and one dead", func() bool {
		qi, err := insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Succeeded == 1 && qi.Dead == 1
	})
	ti, err := insp.GetTask(ctx, queue.DefaultQueue, ok.ID)
	must(t, err)
	if !bytes.Equal(ti.Payload, payload) || string(ti.Result) != "charged "+secret || ti.EncryptedWith != "k1" || ti.Redacted {
		t.Fatalf("GetTask with the ring: payload %q, result %q, key %q, redacted %v", ti.Payload, ti.Result, ti.EncryptedWith, ti.Redacted)
	}
	if ti.Progress == nil || ti.Progress.Message != "charging "+secret || len(ti.Steps) != 1 {
		t.Fatalf("GetTask with the ring: progress %+v, steps %+v", ti.Progress, ti.Steps)
	}
	var step string
	if err := ti.Steps[0].Decode(&step); err != nil || step != "receipt for "+secret {
		t.Fatalf("step value %q, %v", step, err)
	}
	dead, err := insp.GetTask(ctx, queue.DefaultQueue, bad.ID)
	must(t, err)
	if !strings.HasSuffix(dead.LastError, "declined card "+secret) {
		t.Fatalf("the dead task's error reads %q with the ring", dead.LastError)
	}
	if found := redistest.KeysHolding(t, b.rdb, b.qcfg.Prefix+"*", []byte(secret)); len(found) > 0 {
		t.Fatalf("keys holding the secret in clear: %v", found)
	}

	// Without the ring: redacted, nothing in clear, the key named.
	blind, err := queue.NewInspector(b.rdb, b.qcfg)
	must(t, err)
	for _, id := range []string{ok.ID, bad.ID} {
		ti, err := blind.GetTask(ctx, queue.DefaultQueue, id)
		must(t, err)
		text := fmt.Sprintf("%q %q %q %+v %+v", ti.Payload, ti.Result, ti.LastError, ti.Progress, ti.Steps)
		if !ti.Redacted || ti.EncryptedWith != "k1" || strings.Contains(text, secret) || ti.Malformed {
			t.Fatalf("GetTask without the ring: redacted %v, key %q, malformed %v, holds %s", ti.Redacted, ti.EncryptedWith, ti.Malformed, text)
		}
	}
	for _, tc := range []struct {
		insp *queue.Inspector
		n    int
	}{{insp, 1}, {blind, 0}} {
		res, err := tc.insp.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateDead, Error: "declined card"})
		if err != nil || len(res.Tasks) != tc.n {
			t.Fatalf("ListTasks by the encrypted error: %v, %+v; want %d found", err, res, tc.n)
		}
	}
	// it says what is missing: no ring at all, or this key in the ring
	if _, err := blind.WaitResult(ctx, queue.DefaultQueue, ok.ID); !errors.Is(err, queue.ErrUnknownKey) ||
		!strings.Contains(err.Error(), `encrypted with key "k1", and no key ring is configured`) {
		t.Fatalf("WaitResult without a ring: %v, want ErrUnknownKey naming the key and the missing ring", err)
	}
	_, other, _ := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k9") })
	if _, err := other.WaitResult(ctx, queue.DefaultQueue, ok.ID); !errors.Is(err, queue.ErrUnknownKey) ||
		!strings.Contains(err.Error(), `key "k1"`) || strings.Contains(err.Error(), "no key ring") {
		t.Fatalf("WaitResult with a ring that lacks the key: %v, want ErrUnknownKey naming the key", err)
	}
	if res, err := insp.WaitResult(ctx, queue.DefaultQueue, ok.ID); err != nil || string(res) != "charged "+secret {
		t.Fatalf("WaitResult with the ring: %q, %v", res, err)
	}
	page, err := blind.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StateDead})
	must(t, err)
	if len(page.Tasks) != 1 || !page.Tasks[0].Redacted || page.Tasks[0].Payload != nil {
		t.Fatalf("ListTasks without the ring: %+v", page.Tasks)
	}
}

// TestKeyRotation: tasks under an old key and a new one wait side by side;
// a worker whose ring holds both runs every one of them. A producer
// switched to the new key needs no pause of anything.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rotation(t, b.rdb, b.qcfg, queue.DefaultQueue)
}

// TestKeyRotationCluster is TestKeyRotation on a 3-master cluster, the
// queue's 3 partitions one on each master.
func TestKeyRotationCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	q, _ := spreadQueue(t, cl, prefix, 3)
	rotation(t, clusterClient(t, cl), queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}}, q)
}

// rotation enqueues 20 tasks of q under k1, then 20 under k2 with k1 kept,
// checks the key each is under, and runs them all with the newer ring.
func rotation(t *testing.T, rdb redis.UniversalClient, base queue.Config, q string) {
	ctx := context.Background()
	with := func(ring *queue.KeyRing) (*queue.Client, *queue.Inspector, queue.Config) {
		cfg := base
		cfg.KeyRing = ring
		c, err := queue.NewClient(rdb, cfg)
		must(t, err)
		i, err := queue.NewInspector(rdb, cfg)
		must(t, err)
		return c, i, cfg
	}
	oldC, insp, _ := with(ringOf("k1"))
	newC, _, newCfg := with(ringOf("k2", "k1"))
	want := map[string]string{}
	parts := map[int]bool{}
	for i := range 20 {
		for key, c := range map[string]*queue.Client{"k1": oldC, "k2": newC} {
			p := fmt.Sprintf(`{"n":%d,"under":%q}`, i, key)
			info, err := c.Enqueue(ctx, queue.NewRawTask("rotate", []byte(p)), queue.In(q))
			must(t, err)
			want[info.ID] = p
			parts[info.Partition] = true
			ti, err := insp.GetTask(ctx, q, info.ID)
			must(t, err)
			if ti.EncryptedWith != key {
				t.Fatalf("task %s is under key %q, want %q", info.ID, ti.EncryptedWith, key)
			}
		}
	}
	if len(parts) != max(base.Partitions[q], 1) {
		t.Fatalf("tasks went to %d partitions of %d", len(parts), base.Partitions[q])
	}
	var mu sync.Mutex
	got := map[string]string{}
	newCfg.Logger = testLogger(t)
	startServer(t, rdb, Config{Config: newCfg, Queues: map[string]int{q: 1}}, HandlerFunc(func(ctx context.Context, task *Task) error {
		mu.Lock()
		defer mu.Unlock()
		got[task.ID] = string(task.Payload)
		return nil
	}))
	waitFor(t, 20*time.Second, "40 tasks run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(want)
	})
	for id, p := range want {
		if got[id] != p {
			t.Fatalf("task %s ran with %q, want %q", id, got[id], p)
		}
	}
	qi, err := insp.QueueInfo(ctx, q)
	must(t, err)
	if qi.Dead != 0 {
		t.Fatalf("%d tasks dead after the rotation", qi.Dead)
	}
}

// TestUnknownKeyThenAdded: a task under a key the worker's ring lacks goes
// to dead with an error naming the key, its bytes kept; once a worker has
// the key, RunTask runs it with its payload.
func TestUnknownKeyThenAdded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client, _, _ := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k9") })
	_, insp, lacking := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k1") })
	info, err := client.Enqueue(ctx, queue.NewRawTask("secret", []byte("payload under k9")))
	must(t, err)
	rec := newRecorder(nil)
	s := b.serverWith(t, lacking, rec)
	waitFor(t, 10*time.Second, "the task dead", func() bool {
		ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return err == nil && ti.State == queue.StateDead
	})
	ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	must(t, err)
	if !strings.Contains(ti.LastError, `key "k9"`) || !strings.Contains(ti.LastError, "not in the key ring") {
		t.Fatalf("dead task's error %q does not name key k9", ti.LastError)
	}
	if !ti.Redacted || ti.EncryptedWith != "k9" || ti.Payload != nil {
		t.Fatalf("GetTask under a ring without k9: redacted %v, key %q, payload %q", ti.Redacted, ti.EncryptedWith, ti.Payload)
	}
	if rec.total() != 0 {
		t.Fatal("the handler ran a task it could not decrypt")
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, s.Shutdown(sctx))

	_, _, having := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k1", "k9") })
	ran := newRecorder(nil)
	b.serverWith(t, having, ran)
	must(t, insp.RunTask(ctx, queue.DefaultQueue, info.ID))
	waitFor(t, 10*time.Second, "the task run once its key is in the ring", func() bool { return ran.count(info.ID) == 1 })
	ran.mu.Lock()
	p := string(ran.tasks[0].Payload)
	ran.mu.Unlock()
	if p != "payload under k9" {
		t.Fatalf("the handler got %q", p)
	}
}

// TestTamperedRefused: a ciphertext changed in Redis does not
// authenticate: the task goes to dead with why, and never runs.
func TestTamperedRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client, insp, cfg := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k1") })
	info, err := client.Enqueue(ctx, queue.NewRawTask("secret", []byte("transfer 100 to alice")))
	must(t, err)
	msg := []byte(b.pendingBytes(t)[0])
	msg[len(msg)-3] ^= 0x01 // inside the GCM tag
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	must(t, b.rdb.LSet(ctx, k.ShardPrefix()+"0", 0, msg).Err())
	rec := newRecorder(nil)
	b.serverWith(t, cfg, rec)
	waitFor(t, 10*time.Second, "the tampered task dead", func() bool {
		ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return err == nil && ti.State == queue.StateDead
	})
	ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	must(t, err)
	if !strings.Contains(ti.LastError, "does not authenticate") || !ti.Malformed {
		t.Fatalf("dead task: error %q, malformed %v", ti.LastError, ti.Malformed)
	}
	if rec.total() != 0 {
		t.Fatal("the handler ran a tampered task")
	}
}

// TestKeyRingRefused: a ring that cannot encrypt is refused by the
// client, the inspector and the worker alike, naming what is wrong.
func TestKeyRingRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		cfg  queue.Config
		says string
	}{
		{queue.Config{KeyRing: &queue.KeyRing{Current: "a", Keys: map[string][]byte{"a": make([]byte, 16)}}}, `key "a" is 16 bytes, want 32`},
		{queue.Config{KeyRing: &queue.KeyRing{Current: "b", Keys: map[string][]byte{"a": make([]byte, 32)}}}, `Current key "b"`},
		{queue.Config{EncryptErrors: true}, "EncryptErrors needs a KeyRing"},
		{queue.Config{Compression: "zip"}, `Compression "zip"`},
		{queue.Config{CompressAbove: -1}, "CompressAbove -1"},
	} {
		_, err1 := queue.NewClient(b.rdb, tc.cfg)
		_, err2 := queue.NewInspector(b.rdb, tc.cfg)
		_, err3 := NewServer(b.rdb, Config{Config: tc.cfg}, newRecorder(nil))
		for _, err := range []error{err1, err2, err3} {
			if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("config %+v: %v, want ErrInvalid saying %s", tc.cfg, err, tc.says)
			}
		}
	}
	if _, err := queue.ParseKeyRing([]byte(`{"current":"a","keys":{"a":"c2hvcnQ="}}`)); !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("ParseKeyRing of a short key: %v", err)
	}
}

// TestCompressedPastTheLimit: a payload that decompresses past the
// worker's MaxPayloadSize goes to dead with why, before it is
// decompressed, and its bytes stay.
func TestCompressedPastTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	big := bytes.Repeat([]byte(`{"line":"the same words again"},`), 20_000) // 640 KB, compresses well
	info := b.enqueue(t, queue.NewRawTask("big", big))
	if stored := b.pendingBytes(t)[0]; len(stored) > len(big)/10 {
		t.Fatalf("a %d-byte payload is stored in %d bytes", len(big), len(stored))
	}
	_, insp, small := b.with(t, func(c *queue.Config) { c.MaxPayloadSize = 100 << 10 })
	rec := newRecorder(nil)
	b.serverWith(t, small, rec)
	waitFor(t, 10*time.Second, "the task dead", func() bool {
		ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		return err == nil && ti.State == queue.StateDead
	})
	ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	must(t, err)
	if !strings.Contains(ti.LastError, "decompresses past the size limit") || !strings.Contains(ti.LastError, "limit 102400") {
		t.Fatalf("dead task's error %q", ti.LastError)
	}
	if rec.total() != 0 {
		t.Fatal("the handler ran a payload past its limit")
	}
	whole, err := b.insp.GetTask(ctx, queue.DefaultQueue, info.ID)
	if err != nil || !bytes.Equal(whole.Payload, big) {
		t.Fatalf("an Inspector of the producer's limit reads %d bytes back, %v", len(whole.Payload), err)
	}
}

// TestCompressionDictionary: a producer learns a dictionary from a task
// type's first payloads, stores it in Redis, and then compresses the
// type's payloads against it, in under half their size; another
// producer uses the same one; a worker that never saw it reads it from
// Redis and runs every task with its payload.
// Were the dictionary lost, its tasks go to dead with why, their bytes
// kept, and run once it is put back.
func TestCompressionDictionary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	want := map[string][]byte{}
	enqueue := func(n int) (docBytes int) {
		for range n {
			doc := sampledoc.JSON(r)
			docBytes += len(doc)
			want[b.enqueue(t, queue.NewRawTask("order", doc)).ID] = doc
		}
		return docBytes
	}
	var dictKey string
	waitFor(t, 10*time.Second, "a dictionary in Redis", func() bool {
		enqueue(1) // the producer learns from the type's payloads
		found, _ := b.rdb.Keys(ctx, b.qcfg.Prefix+":dict:*").Result()
		if len(found) == 1 {
			dictKey = found[0]
		}
		return len(found) == 1
	})
	id := strings.TrimPrefix(dictKey, b.qcfg.Prefix+":dict:")
	// the producer stores the dictionary, then names it the type's, in a
	// second call: the name may come a moment after the key
	var got string
	waitFor(t, 10*time.Second, "the type's dictionary named", func() bool {
		got = b.rdb.HGet(ctx, b.qcfg.Prefix+":dicts", "order").Val()
		return got != ""
	})
	if got != id {
		t.Fatalf("the type's dictionary is %q, want %s", got, id)
	}
	// A second producer uses the type's dictionary, and stores none.
	other, _, _ := b.with(t, func(*queue.Config) {})
	waitFor(t, 10*time.Second, "the second producer to compress against the dictionary", func() bool {
		doc := sampledoc.JSON(r)
		info, err := other.Enqueue(ctx, queue.NewRawTask("order", doc))
		must(t, err)
		want[info.ID] = doc
		msgs := b.pendingBytes(t)
		return strings.Contains(msgs[len(msgs)-1], "\xc1\x03")
	})
	if found, _ := b.rdb.Keys(ctx, b.qcfg.Prefix+":dict:*").Result(); len(found) != 1 {
		t.Fatalf("%d dictionaries stored for one type, want 1", len(found))
	}
	before := len(b.pendingBytes(t))
	docBytes := enqueue(100)
	stored := 0
	for _, msg := range b.pendingBytes(t)[before:] {
		stored += len(msg)
		if !strings.Contains(msg, "\xc1\x03") {
			t.Fatal("a payload enqueued after the dictionary was stored is not compressed against it")
		}
	}
	if stored*2 > docBytes {
		t.Fatalf("100 documents of %d bytes are stored in %d", docBytes, stored)
	}

	fresh, err := queue.NewInspector(b.rdb, b.qcfg)
	must(t, err)
	page, err := fresh.ListTasks(ctx, queue.TaskQuery{Queue: queue.DefaultQueue, State: queue.StatePending, Limit: 500})
	must(t, err)
	if len(page.Tasks) != len(want) {
		t.Fatalf("%d pending tasks listed, want %d", len(page.Tasks), len(want))
	}
	for _, ti := range page.Tasks {
		if !bytes.Equal(ti.Payload, want[ti.ID]) || ti.Malformed {
			t.Fatalf("an Inspector reads task %s as %q (malformed %v)", ti.ID, ti.Payload, ti.Malformed)
		}
	}

	rec := newRecorder(nil)
	s := b.server(t, Config{}, rec)
	waitFor(t, 20*time.Second, "every task run", func() bool { return rec.total() == len(want) })
	rec.mu.Lock()
	for _, task := range rec.tasks {
		if !bytes.Equal(task.Payload, want[task.ID]) {
			t.Fatalf("task %s ran with %q", task.ID, task.Payload)
		}
	}
	rec.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, s.Shutdown(sctx))

	// The dictionary lost: a worker that has not read it yet cannot open
	// its tasks.
	saved, err := b.rdb.Get(ctx, dictKey).Bytes()
	must(t, err)
	must(t, b.rdb.Del(ctx, dictKey).Err())
	lost := b.enqueue(t, queue.NewRawTask("order", sampledoc.JSON(r)))
	again := newRecorder(nil)
	b.server(t, Config{}, again)
	waitFor(t, 10*time.Second, "the task dead", func() bool {
		ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, lost.ID)
		return err == nil && ti.State == queue.StateDead
	})
	ti, err := b.insp.GetTask(ctx, queue.DefaultQueue, lost.ID)
	must(t, err)
	if !strings.Contains(ti.LastError, "dictionary that is not stored") || !strings.Contains(ti.LastError, id) {
		t.Fatalf("dead task's error %q does not name dictionary %s", ti.LastError, id)
	}
	must(t, b.rdb.Set(ctx, dictKey, saved, 0).Err())
	must(t, b.insp.RunTask(ctx, queue.DefaultQueue, lost.ID))
	waitFor(t, 10*time.Second, "the task run once its dictionary is back", func() bool { return again.count(lost.ID) == 1 })
}

// TestWaitResultPlainUnderRing: a result written in clear, read by an
// Inspector with a ring (and without AllowPlaintext), is an error that
// says it is not encrypted: WaitResult returned no result and no error.
func TestWaitResultPlainUnderRing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.server(t, Config{}, HandlerFunc(func(ctx context.Context, task *Task) error {
		return task.SetResult(ctx, []byte("in clear"))
	}))
	info := b.enqueue(t, queue.NewRawTask("t", nil), queue.Retention(time.Hour))
	if res, err := b.insp.WaitResult(ctx, queue.DefaultQueue, info.ID); err != nil || string(res) != "in clear" {
		t.Fatalf("WaitResult without a ring: %q, %v", res, err)
	}
	_, ringed, _ := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k1") })
	res, err := ringed.WaitResult(ctx, queue.DefaultQueue, info.ID)
	if err == nil || !strings.Contains(err.Error(), "not encrypted") || res != nil {
		t.Fatalf("WaitResult with a ring: %q, %v; want an error that says the result is not encrypted", res, err)
	}
}
