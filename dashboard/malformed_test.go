package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestPoisonedValues: tasks whose msgpack claims more than its bytes hold
// (issue 42: a 5-byte array header claiming 2^32-1 elements ended the
// dashboard's process on the queue page and the task API, read-only
// dashboards too), in the payload, a step's value, the steps record and
// the progress, a worker status of the same kind, and registry values of
// 2e9 partitions, are shown by the pages and the API of a dashboard and a
// read-only one: the payload as undecodable bytes, with why.
func TestPoisonedValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	poisons := map[string]msgpack.RawMessage{
		"claims 4294967295 elements": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"claims 4294967295 entries":  {0xdf, 0xff, 0xff, 0xff, 0xff},
		"claims 4294967295 bytes":    {0x81, 0xa1, 'b', 0xc6, 0xff, 0xff, 0xff, 0xff},
		"nests deeper than 10000":    msgpack.RawMessage(append([]byte(strings.Repeat("\x91", 10_001)), 0)),
	}
	ids := map[string]string{}
	for want, p := range poisons {
		// queue.NewTask refuses such bytes: written in Redis, as a producer
		// outside Go could leave them
		task, err := queue.NewTask("poison", "placeholder")
		must(t, err)
		info, err := e.client.Enqueue(e.ctx, task, queue.In(e.q))
		must(t, err)
		ids[want] = info.ID
		redistest.SetPayload(t, e.rdb, e.cfg.Prefix, e.q, info.ID, p)
	}
	// a timestamp whose body reads as a map header: a valid payload
	trap, err := queue.NewTask("time", msgpack.RawMessage{0x81, 0xa2, 'a', 't', 0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0})
	must(t, err)
	tinfo, err := e.client.Enqueue(e.ctx, trap, queue.In(e.q))
	must(t, err)
	// a task whose step value, and one whose steps record and progress,
	// claim 2^32-1 elements: written as a worker would, under its ID
	k := keys.For(e.cfg.Prefix, e.q, 0)
	sinfo, err := e.client.Enqueue(e.ctx, queue.NewRawTask("steps", []byte("{}")), queue.In(e.q))
	must(t, err)
	steps, err := wire.EncodeSteps(wire.Steps{{Name: "charge", At: time.Now().UnixMilli(), Result: []byte{0xdd, 0xff, 0xff, 0xff, 0xff}}})
	must(t, err)
	must(t, e.rdb.HSet(e.ctx, k.Steps(), wire.StoredID(sinfo.ID), steps).Err())
	rinfo, err := e.client.Enqueue(e.ctx, queue.NewRawTask("record", []byte("{}")), queue.In(e.q))
	must(t, err)
	must(t, e.rdb.HSet(e.ctx, k.Steps(), wire.StoredID(rinfo.ID), []byte{0xdd, 0xff, 0xff, 0xff, 0xff}).Err())
	must(t, e.rdb.HSet(e.ctx, k.Progress(), wire.StoredID(rinfo.ID), []byte{0xdd, 0xff, 0xff, 0xff, 0xff}).Err())
	// registry values of 2e9 partitions: they sized the overview's
	// pipeline
	must(t, e.rdb.HSet(e.ctx, keys.Queues(e.cfg.Prefix), "huge", "2000000000").Err())
	must(t, e.rdb.HSet(e.ctx, keys.Layout(e.cfg.Prefix), e.q, "1/2000000000").Err())
	// a worker whose status claims a map of 2^32-1 queues
	must(t, e.rdb.ZAdd(e.ctx, keys.Workers(e.cfg.Prefix), redis.Z{Score: float64(time.Now().UnixMilli()), Member: "w-poison"}).Err())
	must(t, e.rdb.HSet(e.ctx, keys.WorkerStatus(e.cfg.Prefix), "w-poison", []byte{0x81, 0xa1, 'q', 0xdf, 0xff, 0xff, 0xff, 0xff}).Err())

	for _, opts := range []dashboard.Options{{Unauthenticated: true}, {Unauthenticated: true, ReadOnly: true}} {
		get := e.mount(opts)
		name := fmt.Sprintf("read-only=%v", opts.ReadOnly)
		q := url.PathEscape(e.q)
		for _, path := range []string{"/", "/queues/" + q, "/workers", "/api/workers", "/api/queues", "/api/queues/" + q,
			"/api/queues/" + q + "/tasks?state=pending", "/api/queues/" + q + "/tasks?state=recent"} {
			get(t, path)
		}
		var list struct {
			Tasks []taskJSON `json:"tasks"`
		}
		get(t, "/api/queues/"+q+"/tasks?state=pending").json(t, &list)
		if len(list.Tasks) != len(poisons)+3 {
			t.Fatalf("%s: %d pending tasks listed, want %d", name, len(list.Tasks), len(poisons)+3)
		}
		for want, id := range ids {
			page := get(t, "/queues/"+q+"/tasks/"+id)
			if !strings.Contains(page.body, want) {
				t.Errorf("%s: the task page of %s does not say %q", name, id, want)
			}
			var v taskJSON
			get(t, "/api/queues/"+q+"/tasks/"+id).json(t, &v)
			if !v.Malformed || v.PayloadEncoding != "base64" && v.PayloadEncoding != "text" || !strings.Contains(v.LastError, want) {
				t.Errorf("%s: API task %s: malformed %v, encoding %q, last error %q; want undecodable bytes and %q",
					name, id, v.Malformed, v.PayloadEncoding, v.LastError, want)
			}
		}
		var v taskJSON
		get(t, "/api/queues/"+q+"/tasks/"+tinfo.ID).json(t, &v)
		if v.Malformed || v.PayloadEncoding != "msgpack" || !strings.Contains(string(v.Payload), `"2513-11-16T21:32:48.939524095Z"`) {
			t.Errorf("%s: the timestamp task: malformed %v, encoding %q, payload %s", name, v.Malformed, v.PayloadEncoding, v.Payload)
		}
		get(t, "/queues/"+q+"/tasks/"+sinfo.ID)
		get(t, "/api/queues/"+q+"/tasks/"+sinfo.ID).json(t, &v)
		if len(v.Steps) != 1 || !strings.Contains(v.Steps[0].ValueError, "claims 4294967295 elements") || v.Steps[0].ValueBase64 != "3f////8=" {
			t.Errorf("%s: the poisoned step: %+v", name, v.Steps)
		}
		get(t, "/queues/"+q+"/tasks/"+rinfo.ID)
		get(t, "/api/queues/"+q+"/tasks/"+rinfo.ID).json(t, &v)
		if !v.Malformed || !strings.Contains(v.LastError, "decode steps") {
			t.Errorf("%s: the poisoned steps record: malformed %v, last error %q", name, v.Malformed, v.LastError)
		}
	}
}

// taskJSON is what the tests read of the API's task.
type taskJSON struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Malformed       bool            `json:"malformed"`
	LastError       string          `json:"last_error"`
	Steps           []struct {
		ValueBase64 string `json:"value_base64"`
		ValueError  string `json:"value_error"`
	} `json:"steps"`
}

// TestDowngradedPayload: an encrypted payload whose envelope flag was
// changed in Redis from sealed to plain was shown by a dashboard with the
// ring as a plain value (its ciphertext). It is marked malformed, with
// why, and so is a plain payload, unless the Inspector allows plaintext.
func TestDowngradedPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ring := &queue.KeyRing{Current: "k1", Keys: map[string][]byte{"k1": []byte(strings.Repeat("k", 32))}}
	cfg := e.cfg
	cfg.KeyRing = ring
	client, err := queue.NewClient(e.rdb, cfg)
	must(t, err)
	info, err := client.Enqueue(e.ctx, queue.NewRawTask("secret", []byte("transfer 100 to alice")), queue.In(e.q))
	must(t, err)
	plain, err := e.client.Enqueue(e.ctx, queue.NewRawTask("secret", []byte("written before the ring")), queue.In(e.q))
	must(t, err)
	k := keys.For(e.cfg.Prefix, e.q, 0)
	msgs, err := e.rdb.LRange(e.ctx, k.ShardPrefix()+"0", 0, -1).Result()
	must(t, err)
	at := strings.Index(msgs[0], "\xc1\x04\x02k1")
	if at < 0 {
		t.Fatalf("no sealed envelope in % x", msgs[0])
	}
	downgraded := msgs[0][:at+1] + "\x00" + msgs[0][at+2:]
	must(t, e.rdb.LSet(e.ctx, k.ShardPrefix()+"0", 0, downgraded).Err())
	// the first task pushed to an empty shard has a copy in the feed,
	// which the Inspector reads
	if e.rdb.HExists(e.ctx, k.FeedMsg(), wire.StoredID(info.ID)).Val() {
		must(t, e.rdb.HSet(e.ctx, k.FeedMsg(), wire.StoredID(info.ID), downgraded).Err())
	}
	for _, allow := range []bool{false, true} {
		c := cfg
		c.AllowPlaintext = allow
		insp, err := queue.NewInspector(e.rdb, c)
		must(t, err)
		e.insp = insp
		get := e.mount(dashboard.Options{Unauthenticated: true})
		for _, id := range []string{info.ID, plain.ID} {
			var v taskJSON
			get(t, "/api/queues/"+url.PathEscape(e.q)+"/tasks/"+id).json(t, &v)
			refused := v.Malformed && strings.Contains(v.LastError, "not encrypted") && strings.Contains(v.LastError, "AllowPlaintext")
			if refused == allow {
				t.Errorf("allow plaintext %v, task %s: malformed %v, last error %q, payload %s", allow, id, v.Malformed, v.LastError, v.Payload)
			}
			page := get(t, "/queues/"+url.PathEscape(e.q)+"/tasks/"+id)
			if !allow && !strings.Contains(page.body, "not encrypted") {
				t.Errorf("the task page of %s does not say it is not encrypted", id)
			}
		}
	}
}
