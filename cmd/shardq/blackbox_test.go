package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestPoisonedTasksBlackBox is issue 42's black box: a `shardq worker`
// process and a read-only `shardq dashboard` process, both with a key
// ring, meet 1,000 good tasks and, before them, four bad ones: a payload
// whose array header claims 2^32-1 elements (it killed every process
// that decoded it), one whose map header claims 10^8 entries, a sealed
// value of two zstd frames whose second holds 64 MiB of zeros (41 KB in
// Redis once reached a handler as 200 MiB), and a sealed payload whose
// flags were changed in Redis to say plain (it ran with its ciphertext).
// Every good task runs exactly once, each bad one goes to dead with its
// reason and never reaches the handler, both processes stay up, and the
// dashboard's pages and API render every task.
func TestPoisonedTasksBlackBox(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	key := bytes.Repeat([]byte{7}, 32)
	ringJSON := `{"current":"k1","keys":{"k1":"` + base64.StdEncoding.EncodeToString(key) + `"}}`
	ringFile := filepath.Join(t.TempDir(), "ring.json")
	must(t, os.WriteFile(ringFile, []byte(ringJSON), 0o600))
	ring, err := queue.ParseKeyRing([]byte(ringJSON))
	must(t, err)
	cfg := queue.Config{KeyRing: ring}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, cfg)
	must(t, err)

	// the handler: what the worker POSTs, counted by task
	var mu sync.Mutex
	runs := map[string]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		runs[r.Header.Get("X-Shardq-Task-Id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	// the bad tasks, each with what its dead task's error must say
	kept := queue.Retention(time.Hour)
	enqueue := func(task *queue.Task, err error) string {
		must(t, err)
		info, err := client.Enqueue(ctx, task, kept)
		must(t, err)
		return info.ID
	}
	// queue.NewTask refuses the first two: written in Redis, as a producer
	// outside Go could leave them (below)
	array := enqueue(queue.NewTask("poison", "placeholder"))
	hash := enqueue(queue.NewTask("poison", "placeholder"))
	bad := map[string]string{array: "claims 4294967295 elements", hash: "claims 100000000 entries"}
	bomb := enqueue(queue.NewRawTask("bomb", []byte("placeholder")), nil)
	down := enqueue(queue.NewRawTask("secret", []byte("transfer 100 to alice")), nil)
	bad[bomb], bad[down] = "decompresses past the size limit", "not encrypted"

	// rewrite the last two in Redis, as a writer to it could
	shard := keys.For("shardq", queue.DefaultQueue, 0).ShardPrefix() + "0" // the default prefix
	redistest.SetPayload(t, rdb, config.DefaultPrefix, queue.DefaultQueue, array, sealed(t, key, array, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, 0))
	redistest.SetPayload(t, rdb, config.DefaultPrefix, queue.DefaultQueue, hash, sealed(t, key, hash, []byte{0xdf, 0x05, 0xf5, 0xe1, 0x00}, 0))
	stored, err := rdb.LRange(ctx, shard, 0, -1).Result()
	must(t, err)
	if len(stored) != 4 {
		t.Fatalf("%d messages in %s, want the 4 bad tasks", len(stored), shard)
	}
	sealedAt := func(msg string) int {
		at := strings.Index(msg, string([]byte{envelope.Magic, 0x04, 2, 'k', '1'}))
		if at < 0 {
			t.Fatalf("no sealed envelope in % x", msg)
		}
		return at
	}
	var m wire.Message
	must(t, wire.DecodeMessageString(stored[2], &m))
	m.Payload = sealed(t, key, bomb, zstdBomb(t), 0x02)
	must(t, rdb.LSet(ctx, shard, 2, m.AppendEncode(nil, false)).Err())
	at := sealedAt(stored[3])
	must(t, rdb.LSet(ctx, shard, 3, stored[3][:at+1]+"\x00"+stored[3][at+2:]).Err())

	good := make([]*queue.Task, 1000)
	for i := range good {
		good[i], err = queue.NewTask("good", map[string]int{"n": i})
		must(t, err)
	}
	infos, err := client.EnqueueMany(ctx, good)
	must(t, err)

	env := append(os.Environ(), "SHARDQ_TEST_MAIN=1")
	redisURL := "redis://" + srv.Addr
	var handlers []string
	for _, typ := range []string{"good", "poison", "bomb", "secret"} {
		handlers = append(handlers, "--handler", typ+"=http:"+hook.URL)
	}
	worker := startProcess(t, env, append([]string{"worker", "--redis", redisURL, "--key-file", ringFile, "--json", "--concurrency", "16"}, handlers...)...)
	dash := startProcess(t, env, "dashboard", "--redis", redisURL, "--key-file", ringFile, "--read-only", "--addr", "127.0.0.1:0")
	var base string
	waitUntil(t, 30*time.Second, "the dashboard's address", func() bool {
		m := regexp.MustCompile(`dashboard on (http://\S+)/`).FindStringSubmatch(dash.stdout.String())
		if m != nil {
			base = m[1]
		}
		return base != ""
	})

	waitUntil(t, 2*time.Minute, "every good task run and every bad one dead", func() bool {
		worker.alive(t)
		dash.alive(t)
		qi, err := insp.QueueInfo(ctx, queue.DefaultQueue)
		return err == nil && qi.Pending == 0 && qi.Active == 0 && qi.Scheduled == 0 && qi.Retry == 0 && qi.Dead == int64(len(bad))
	})
	mu.Lock()
	for _, info := range infos {
		if runs[info.ID] != 1 {
			t.Errorf("good task %s ran %d times, want once", info.ID, runs[info.ID])
		}
	}
	for id := range bad {
		if runs[id] != 0 {
			t.Errorf("bad task %s reached the handler", id)
		}
	}
	mu.Unlock()
	for id, why := range bad {
		ti, err := insp.GetTask(ctx, queue.DefaultQueue, id)
		must(t, err)
		if ti.State != queue.StateDead || !strings.Contains(ti.LastError, why) {
			t.Errorf("bad task %s: %s, error %q; want dead saying %q", id, ti.State, ti.LastError, why)
		}
	}

	// the dashboard renders every page that shows them
	paths := []string{"/", "/queues/default", "/queues/default?state=dead", "/api/queues", "/api/queues/default",
		"/api/queues/default/tasks?state=dead", "/workers"}
	for id := range bad {
		paths = append(paths, "/queues/default/tasks/"+id, "/api/queues/default/tasks/"+id)
	}
	get := func(p string) string {
		resp, err := http.Get(base + p)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s\n%s", p, resp.Status, body)
		}
		return string(body)
	}
	for _, p := range paths {
		get(p)
	}
	for id, why := range bad {
		if page := get("/queues/default/tasks/" + id); !strings.Contains(page, why) {
			t.Errorf("the task page of %s does not say %q", id, why)
		}
	}
	for _, p := range []*process{worker, dash} {
		p.alive(t)
		must(t, p.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("%s after SIGTERM: %v\n%s", p.name, err, p.stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop after SIGTERM", p.name)
		}
	}
}

// zstdBomb returns two zstd frames, a small one that states its size
// and one of 64 MiB of zeros, without the first frame's 4-byte magic
// number, as the envelope stores a zstd body.
func zstdBomb(t *testing.T) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	body := enc.EncodeAll([]byte("a small first frame"), nil)[4:]
	body = enc.EncodeAll(make([]byte, 64<<20), body)
	must(t, enc.Close())
	return body
}

// sealed returns body sealed as the payload envelope of task id under
// key "k1", its compression flags codec (0 none, 2 zstd): what a writer
// to Redis who holds the key could store.
func sealed(t *testing.T, key []byte, id string, body []byte, codec byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	must(t, err)
	aead, err := cipher.NewGCM(block)
	must(t, err)
	flags := 0x04 | codec // encrypted
	out := []byte{envelope.Magic, flags, 2, 'k', '1'}
	nonce := make([]byte, envelope.NonceSize)
	_, _ = rand.Read(nonce)
	out = append(out, nonce...)
	// the associated data: the use, the flags, the task's stored ID
	ad := append([]byte{byte(envelope.Payload), flags}, wire.StoredID(id)...)
	return aead.Seal(out, nonce, body, ad)
}

// process is a shardq process the test runs: this test binary as shardq.
type process struct {
	name   string
	cmd    *exec.Cmd
	done   chan error
	stdout *syncBuffer
	stderr *syncBuffer
}

// alive fails the test when p has exited.
func (p *process) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		t.Fatalf("%s exited: %v\n%s", p.name, err, lastBytes(p.stderr.String(), 2000))
	default:
	}
}

// lastBytes returns the last n bytes of s.
func lastBytes(s string, n int) string { return s[max(0, len(s)-n):] }

func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: "shardq " + args[0], cmd: exec.Command(os.Args[0], args...), done: make(chan error, 1),
		stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	must(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}
