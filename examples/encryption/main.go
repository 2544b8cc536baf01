// Command encryption shows payloads encrypted under a key ring that
// rotates: a producer on the old key and one on the new key enqueue side
// by side, an Inspector without the ring sees their payloads redacted,
// and a worker whose ring holds both keys runs every task with the
// plaintext and writes an encrypted result.
//
//	go run ./examples/encryption
//
// The keys are made at random on each run. In your code, load a ring with
// queue.ParseKeyRing from where your secrets live.
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-encryption", apart from anything else in that
// Redis.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func main() {
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()

	october, november := newKey(), newKey()
	oldRing := &queue.KeyRing{Current: "2026-10", Keys: map[string][]byte{"2026-10": october}}
	// the rotated ring: the new key is current, the old one still reads
	newRing := &queue.KeyRing{Current: "2026-11", Keys: map[string][]byte{"2026-10": october, "2026-11": november}}
	base := queue.Config{Prefix: "example-encryption"}
	oldCfg, newCfg := base, base
	oldCfg.KeyRing, newCfg.KeyRing = oldRing, newRing

	var ids []string
	for i, cfg := range []queue.Config{oldCfg, newCfg} {
		client, err := queue.NewClient(rdb, cfg)
		if err != nil {
			log.Fatal(err)
		}
		payload := fmt.Sprintf(`{"iban": "DE89 3704 0044 0532 0130 0%d", "cents": %d}`, i, 1000*(i+1))
		info, err := client.Enqueue(ctx, queue.NewRawTask("payout", []byte(payload)), queue.Retention(time.Hour))
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, info.ID)
	}

	blind, err := queue.NewInspector(rdb, base)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range ids {
		ti, err := blind.GetTask(ctx, queue.DefaultQueue, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("without the ring: task under key %s, redacted %v, payload %q\n", ti.EncryptedWith, ti.Redacted, ti.Payload)
	}

	mux := worker.NewMux()
	mux.HandleFunc("payout", func(ctx context.Context, t *worker.Task) error {
		fmt.Printf("handler: %s\n", t.Payload)
		return t.SetResult(ctx, []byte("paid "+strings.SplitN(string(t.Payload), `"`, 5)[3]))
	})
	srv, err := worker.NewServer(rdb, worker.Config{Config: newCfg}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	insp, err := queue.NewInspector(rdb, newCfg)
	if err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range ids {
		res, err := insp.WaitResult(wctx, queue.DefaultQueue, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("with the ring: result %q\n", res)
	}
}

// newKey returns 32 random bytes: an AES-256 key.
func newKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		log.Fatal(err)
	}
	return k
}
