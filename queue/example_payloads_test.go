package queue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/shardq/shardq/queue"
)

// A key ring is JSON that names the current key and holds every key by
// ID, 32 bytes each in base64. Load it from where your secrets live.
func ExampleParseKeyRing() {
	ring, err := queue.ParseKeyRing([]byte(`{"current": "2026-11", "keys": {
		"2026-10": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"2026-11": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("writes under", ring.Current, "and reads", len(ring.Keys), "keys")
	// Output: writes under 2026-11 and reads 2 keys
}

// A producer with a key ring stores payloads encrypted. An Inspector with
// the same ring reads them; one without sees them redacted, with the key
// named.
func ExampleConfig_keyRing() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	ring := &queue.KeyRing{Current: "k1", Keys: map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")}}
	client, err := queue.NewClient(rdb, queue.Config{KeyRing: ring})
	if err != nil {
		log.Fatal(err)
	}
	info, err := client.Enqueue(ctx, queue.NewRawTask("payout", []byte(`{"iban": "DE89370400440532013000"}`)))
	if err != nil {
		log.Fatal(err)
	}
	withRing, _ := queue.NewInspector(rdb, queue.Config{KeyRing: ring})
	blind, _ := queue.NewInspector(rdb, queue.Config{})
	for _, insp := range []*queue.Inspector{withRing, blind} {
		ti, err := insp.GetTask(ctx, queue.DefaultQueue, info.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("key %s, redacted %v: %s\n", ti.EncryptedWith, ti.Redacted, ti.Payload)
	}
	// Output:
	// key k1, redacted false: {"iban": "DE89370400440532013000"}
	// key k1, redacted true:
}
