package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// TestDowngradeRefused: an encrypted payload whose envelope flag was
// changed in Redis from sealed to plain once ran, its handler given the
// ciphertext as the payload, and the Inspector showed it as a plain
// value. A worker with a key ring refuses it, and a plain payload too:
// the task goes to dead naming AllowPlaintext, its handler never runs,
// and the Inspector marks it malformed. With AllowPlaintext, as during a
// migration to encryption, the plain task runs.
func TestDowngradeRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client, insp, cfg := b.with(t, func(c *queue.Config) { c.KeyRing = ringOf("k1") })
	sealed, err := client.Enqueue(ctx, queue.NewRawTask("secret", []byte("transfer 100 to alice")), queue.Retention(time.Hour))
	must(t, err)
	msg := b.pendingBytes(t)[0]
	// the envelope: magic, flags (encrypted), the key ID's length and "k1"
	at := strings.Index(msg, string([]byte{envelope.Magic, 0x04, 2, 'k', '1'}))
	if at < 0 {
		t.Fatalf("no sealed envelope in the stored message % x", msg)
	}
	k := keys.For(b.qcfg.Prefix, queue.DefaultQueue, 0)
	must(t, b.rdb.LSet(ctx, k.ShardPrefix()+"0", 0, msg[:at+1]+"\x00"+msg[at+2:]).Err())
	// a producer without the ring: as before encryption was turned on
	plain := b.enqueue(t, queue.NewRawTask("secret", []byte("written before the ring")), queue.Retention(time.Hour))

	rec := newRecorder(nil)
	s := b.serverWith(t, cfg, rec)
	for _, id := range []string{sealed.ID, plain.ID} {
		ti := waitDead(t, insp, id)
		if !strings.Contains(ti.LastError, "not encrypted") || !strings.Contains(ti.LastError, "AllowPlaintext") || !ti.Malformed {
			t.Errorf("task %s: last error %q, malformed %v", id, ti.LastError, ti.Malformed)
		}
	}
	if rec.total() != 0 {
		t.Fatalf("the handler ran %d tasks that are not encrypted", rec.total())
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, s.Shutdown(sctx))

	cfg.AllowPlaintext = true
	ran := newRecorder(nil)
	b.serverWith(t, cfg, ran)
	must(t, insp.RunTask(ctx, queue.DefaultQueue, plain.ID))
	waitFor(t, 10*time.Second, "the plain task run under AllowPlaintext", func() bool { return ran.count(plain.ID) == 1 })
	ran.mu.Lock()
	got := string(ran.tasks[0].Payload)
	ran.mu.Unlock()
	if got != "written before the ring" {
		t.Fatalf("the handler got %q", got)
	}
}
