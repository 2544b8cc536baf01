package queue

import (
	"bytes"
	"context"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/sampledoc"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// The protocol's golden vectors (docs/protocol.md, "Golden vectors"):
// language-neutral JSON under testdata/protocol/ at the repository root,
// each an enqueue's inputs (a task, its options, the client's Config, a
// fixed time, fixed generated IDs and nonces) and what this Client makes
// of them (the stored ID, the partition, the stored payload, the message,
// and the script calls as go-redis sends them). TestProtocolVectors
// rebuilds every vector from its inputs and fails on any byte that moved;
// `go test -run TestProtocolVectors -update ./queue/` rewrites the files
// from the cases below.

var updateVectors = flag.Bool("update", false, "rewrite testdata/protocol/*.json from the Go code (TestProtocolVectors)")

const vectorDir = "../testdata/protocol"

type vecFile[C any] struct {
	About string `json:"about"`
	Cases []C    `json:"cases"`
}

type vecCase struct {
	Name         string    `json:"name"`
	About        string    `json:"about"`
	Config       vecConfig `json:"config"`
	NowMs        int64     `json:"now_ms"`
	GeneratedIDs []string  `json:"generated_ids,omitempty"` // public form, used in order
	NoncesHex    []string  `json:"nonces_hex,omitempty"`    // used in order
	Tasks        []vecTask `json:"tasks"`
	Expect       vecExpect `json:"expect"`
}

type vecConfig struct {
	Prefix        string         `json:"prefix"`
	Partitions    map[string]int `json:"partitions,omitempty"`
	ShardSize     int            `json:"shard_size"`
	FeedSize      int            `json:"feed_size"`
	IDTTLMs       int64          `json:"id_ttl_ms"`
	Compression   string         `json:"compression"`
	CompressAbove int            `json:"compress_above"`
	FullMessages  bool           `json:"full_messages,omitempty"`
	Dictionary    *vecDict       `json:"dictionary,omitempty"`
	KeyRing       *vecRing       `json:"key_ring,omitempty"`
}

type vecDict struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	BytesB64 string `json:"bytes_b64"`
}

type vecRing struct {
	Current string            `json:"current"`
	Keys    map[string]string `json:"keys_b64"`
}

type vecTask struct {
	Type                string            `json:"type"`
	PayloadB64          string            `json:"payload_b64"`
	Raw                 bool              `json:"raw,omitempty"`
	Queue               string            `json:"queue,omitempty"`
	MaxRetry            *int              `json:"max_retry,omitempty"`
	TimeoutMs           int64             `json:"timeout_ms,omitempty"`
	DeadlineMs          int64             `json:"deadline_ms,omitempty"`
	ProcessAtMs         int64             `json:"process_at_ms,omitempty"`
	ProcessInMs         int64             `json:"process_in_ms,omitempty"`
	RetentionMs         int64             `json:"retention_ms,omitempty"`
	UniqueTTLMs         int64             `json:"unique_ttl_ms,omitempty"`
	UniqueBy            string            `json:"unique_by,omitempty"`
	UniqueUntilFinished bool              `json:"unique_until_finished,omitempty"`
	UniqueAfterMs       int64             `json:"unique_after_ms,omitempty"`
	TaskID              string            `json:"task_id,omitempty"`
	Group               string            `json:"group,omitempty"`
	Headers             map[string]string `json:"headers,omitempty"`
}

type vecExpect struct {
	Tasks []vecTaskOut `json:"tasks"`
	Calls []vecCall    `json:"calls"`
}

type vecTaskOut struct {
	PublicID     string  `json:"public_id"`
	StoredIDHex  string  `json:"stored_id_hex"`
	RouteKeyHex  *string `json:"route_key_hex"` // null: round-robin
	Partition    int     `json:"partition"`
	Tag          string  `json:"tag"`
	UniquenessID string  `json:"uniqueness_id,omitempty"`
	EnvelopeHex  string  `json:"envelope_hex"`
	Form         string  `json:"form"`
	MessageHex   string  `json:"message_hex"`
}

type vecCall struct {
	Script    string   `json:"script"`
	When      string   `json:"when"`
	Partition int      `json:"partition"`
	Keys      []string `json:"keys"`
	Argv      []vecArg `json:"argv"`
	// Reply is the call's reply on an empty Redis (redis-server 7): a
	// code per task, or enqueue_one's one integer
	Reply any `json:"reply"`
	// ReplyAgain is the reply of the same call made once more right
	// after: a duplicate TaskID or uniqueness ID is refused then
	ReplyAgain any `json:"reply_again"`
}

// vecArg is one argument as Redis receives it: text when it is printable
// UTF-8, else hex.
type vecArg struct {
	Str *string `json:"str,omitempty"`
	Hex *string `json:"hex,omitempty"`
}

func (a vecArg) bytes() []byte {
	if a.Str != nil {
		return []byte(*a.Str)
	}
	b, _ := hex.DecodeString(*a.Hex)
	return b
}

func argOf(b []byte) vecArg {
	printable := utf8.Valid(b)
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			printable = false
		}
	}
	s := string(b)
	if printable {
		return vecArg{Str: &s}
	}
	h := hex.EncodeToString(b)
	return vecArg{Hex: &h}
}

// argBytes is an argument as go-redis writes it, for the types the
// enqueue calls pass.
func argBytes(t testing.TB, v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []byte:
		return v
	case int:
		return strconv.AppendInt(nil, int64(v), 10)
	case int64:
		return strconv.AppendInt(nil, v, 10)
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("argument of type %T", v)
	return nil
}

func intp(n int) *int { return &n }

// vecKey is a fixed AES-256 key: bytes 0x00..0x1f.
func vecKey() string {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// vectorCases returns the enqueue vectors' inputs.
func vectorCases() []vecCase {
	r := rand.New(rand.NewPCG(44, 1))
	doc := sampledoc.JSON(r) // ~1 KB of JSON
	// msgpack {"to": "a@b.com"}
	small := []byte{0x81, 0xa2, 't', 'o', 0xa7, 'a', '@', 'b', '.', 'c', 'o', 'm'}
	order := []byte(`{"order":42,"sku":"A-7"}`)
	var sample []byte
	for range 8 {
		sample = append(sample, sampledoc.JSON(r)...)
	}
	dict := envelope.NewDict(sample)
	dictDoc := sampledoc.JSON(r)
	for len(dictDoc) < 600 {
		dictDoc = sampledoc.JSON(r)
	}
	b64 := base64.StdEncoding.EncodeToString
	defaults := vecConfig{Prefix: "shardq", ShardSize: 1000, FeedSize: 10000, IDTTLMs: 86_400_000, Compression: "fast", CompressAbove: 512}
	with := func(f func(*vecConfig)) vecConfig {
		c := defaults
		f(&c)
		return c
	}
	const now = 1_767_225_600_123 // 2026-01-01T00:00:00.123Z
	id1 := "019b7708-6a7b-7cc4-8d2e-3f4a5b6c7d8e"
	id2 := "019b7708-6a7b-7cc4-9f00-112233445566"
	ring := &vecRing{Current: "k1", Keys: map[string]string{"k1": vecKey()}}
	nonce := "000102030405060708090a0b"
	return []vecCase{
		{Name: "plain-msgpack", About: "a plain task with a msgpack payload: the compact form, 0x91; enqueue_one applies",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small)}}},
		{Name: "plain-raw", About: "a plain task with a raw (JSON) payload: the compact form, 0x92",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true}}},
		{Name: "plain-full-messages", About: "the plain-msgpack task under FullMessages: a full message of 6 fields",
			Config: with(func(c *vecConfig) { c.FullMessages = true }), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small)}}},
		{Name: "empty-payload", About: "a plain task with no payload: still compact, nothing after the type",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "tick", PayloadB64: ""}}},
		{Name: "max-retry-0", About: "MaxRetry 0 is not the compact form's 25: a full message, whose trailing zero fields (MaxRetry among them) are left out: 4 fields",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), MaxRetry: intp(0)}}},
		{Name: "group", About: "a task with a group on a queue of 4 partitions: routed by FNV-1a of the group; the group is the message's second element",
			Config: with(func(c *vecConfig) { c.Partitions = map[string]int{"mail": 4} }), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), Queue: "mail", Group: "tenant-7"}}},
		{Name: "round-robin", About: "a plain task on a queue of 4 partitions: no route key, round-robin (a fresh Go client picks partition 1 first)",
			Config: with(func(c *vecConfig) { c.Partitions = map[string]int{"mail": 4} }), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), Queue: "mail"}}},
		{Name: "task-id", About: "a caller's TaskID: stored as given, routed by it, claimed for IDTTL; EnqueuedAt is written (field 11)",
			Config: with(func(c *vecConfig) { c.Partitions = map[string]int{"orders": 8} }), NowMs: now,
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true, Queue: "orders", TaskID: "order-42"}}},
		{Name: "task-id-16-bytes", About: "a caller's TaskID of exactly 16 bytes: stored with 0x00 appended",
			Config: defaults, NowMs: now,
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true, TaskID: "0123456789abcdef"}}},
		{Name: "task-id-uuid-text", About: "a caller's TaskID that is canonical lowercase UUID text: stored as its 16 bytes, still claimed",
			Config: defaults, NowMs: now,
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true, TaskID: id2}}},
		{Name: "unique", About: "Unique(1h): the uniqueness ID is the type, ':' and the hex SHA-1 of the payload; routed by it",
			Config: with(func(c *vecConfig) { c.Partitions = map[string]int{"default": 4} }), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), UniqueTTLMs: 3_600_000}}},
		{Name: "unique-by-until-finished", About: "UniqueBy(\"order-42\", 1m) and UniqueUntilFinished(10s): ttl -10001",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true, UniqueBy: "order-42", UniqueTTLMs: 60_000, UniqueUntilFinished: true, UniqueAfterMs: 10_000}}},
		{Name: "process-in", About: "ProcessIn(30s): a delay the server's clock times (due in), full ARGV layout",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), ProcessInMs: 30_000}}},
		{Name: "process-at", About: "ProcessAt(a fixed time): due at, in unix ms",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small), ProcessAtMs: 4_102_444_800_000}}}, // 2100-01-01
		{Name: "options-and-headers", About: "MaxRetry, Timeout, Deadline, Retention and headers: a full message of 12 fields, headers sorted by key",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "report:build", PayloadB64: b64(small), MaxRetry: intp(3), TimeoutMs: 30_000, DeadlineMs: now + 86_400_000,
				RetentionMs: 86_400_000, Headers: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tenant": "acme"}}}},
		{Name: "compressed-s2", About: "a 1 KB raw payload under Compression fast, no dictionary yet: envelope C1 01, S2 block",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "order:created", PayloadB64: b64(doc), Raw: true}}},
		{Name: "compressed-zstd", About: "the same payload under Compression small: envelope C1 02, a zstd frame without its magic",
			Config: with(func(c *vecConfig) { c.Compression = "small" }), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "order:created", PayloadB64: b64(doc), Raw: true}}},
		{Name: "compressed-dictionary", About: "a payload of a type with a dictionary: envelope C1 03, the dictionary's 8-byte ID, S2 against it",
			Config: with(func(c *vecConfig) {
				c.Dictionary = &vecDict{Type: "order:created", ID: dict.ID, BytesB64: b64(dict.Bytes)}
			}), NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "order:created", PayloadB64: b64(dictDoc), Raw: true}}},
		{Name: "encrypted", About: "a small payload under a key ring: envelope C1 04, key ID, nonce, AES-256-GCM; still the compact form",
			Config: with(func(c *vecConfig) { c.KeyRing = ring }), NowMs: now, GeneratedIDs: []string{id1}, NoncesHex: []string{nonce},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small)}}},
		{Name: "encrypted-compressed", About: "a 1 KB payload under a key ring: compressed (S2) then sealed, flags 0x05",
			Config: with(func(c *vecConfig) { c.KeyRing = ring }), NowMs: now, GeneratedIDs: []string{id1}, NoncesHex: []string{nonce},
			Tasks: []vecTask{{Type: "order:created", PayloadB64: b64(doc), Raw: true}}},
		{Name: "encrypted-task-id", About: "a sealed payload of a caller's TaskID: the associated data holds the stored ID",
			Config: with(func(c *vecConfig) { c.KeyRing = ring }), NowMs: now, NoncesHex: []string{nonce},
			Tasks: []vecTask{{Type: "order:ship", PayloadB64: b64(order), Raw: true, TaskID: "order-42"}}},
		{Name: "magic-escape", About: "a raw payload that opens with 0xC1: wrapped with flags 0 so it reads back exactly",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1},
			Tasks: []vecTask{{Type: "blob", PayloadB64: b64([]byte{0xc1, 0x00, 0x01}), Raw: true}}},
		{Name: "long-names-many-headers", About: "a TaskID and a type of 32 bytes and more (str8), MaxRetry forever (uint64), 16 headers (map16)",
			Config: defaults, NowMs: now,
			Tasks: []vecTask{{Type: "reports:quarterly:build-and-send", PayloadB64: b64(small), TaskID: "invoice-2026-000000000000000000000042",
				MaxRetry: intp(math.MaxInt64), Headers: sixteenHeaders()}}},
		{Name: "many-mixed", About: "EnqueueMany of two tasks to one partition, one plain and one delayed: one call, 7 fields per task",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1, "019b7708-6a7c-7000-8000-000000000001"},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small)}, {Type: "email:send", PayloadB64: b64(small), ProcessInMs: 5000}}},
		{Name: "many-plain", About: "EnqueueMany of two plain tasks to one partition: 2 fields per task",
			Config: defaults, NowMs: now, GeneratedIDs: []string{id1, "019b7708-6a7c-7000-8000-000000000001"},
			Tasks: []vecTask{{Type: "email:send", PayloadB64: b64(small)}, {Type: "email:send", PayloadB64: b64(small), Group: "tenant-7"}}},
	}
}

// sixteenHeaders returns 16 headers: the least that needs a map16.
func sixteenHeaders() map[string]string {
	h := map[string]string{}
	for i := range 16 {
		h[fmt.Sprintf("h%02d", i)] = strconv.Itoa(i)
	}
	return h
}

// noRedis is a Redis client that never connects: building a vector
// needs no server, and the dictionary learner's lookup fails at once.
func noRedis() *redis.Client {
	return redis.NewClient(&redis.Options{Dialer: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("the protocol's vectors use no Redis")
	}, MaxRetries: -1})
}

// runVector builds c's tasks as Client.EnqueueMany (or Enqueue, for one)
// would, with its time, IDs and nonces fixed, and returns what it made.
func runVector(t *testing.T, vc vecCase) vecExpect {
	t.Helper()
	cfg := Config{Prefix: vc.Config.Prefix, Partitions: vc.Config.Partitions, ShardSize: vc.Config.ShardSize, FeedSize: vc.Config.FeedSize,
		IDTTL: time.Duration(vc.Config.IDTTLMs) * time.Millisecond, Compression: vc.Config.Compression,
		CompressAbove: vc.Config.CompressAbove, FullMessages: vc.Config.FullMessages, NoCoalescing: true}
	if r := vc.Config.KeyRing; r != nil {
		cfg.KeyRing = &KeyRing{Current: r.Current, Keys: map[string][]byte{}}
		for id, k := range r.Keys {
			b, err := base64.StdEncoding.DecodeString(k)
			if err != nil {
				t.Fatal(err)
			}
			cfg.KeyRing.Keys[id] = b
		}
	}
	c, err := NewClient(noRedis(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.rdb.Close()
	ids := slices.Clone(vc.GeneratedIDs)
	c.newID = func() string {
		if len(ids) == 0 {
			t.Fatalf("%s: more generated IDs needed than the vector gives", vc.Name)
		}
		id := wire.StoredID(ids[0])
		ids = ids[1:]
		return id
	}
	var nonces []byte
	for _, n := range vc.NoncesHex {
		b, err := hex.DecodeString(n)
		if err != nil {
			t.Fatal(err)
		}
		nonces = append(nonces, b...)
	}
	c.codec.Rand = bytes.NewReader(nonces)
	if d := vc.Config.Dictionary; d != nil {
		b, err := base64.StdEncoding.DecodeString(d.BytesB64)
		if err != nil {
			t.Fatal(err)
		}
		dict := envelope.LoadDict(b)
		if dict == nil || dict.ID != d.ID {
			t.Fatalf("%s: the dictionary does not load, or its ID is not %s", vc.Name, d.ID)
		}
		c.dicts.Set(d.Type, dict)
	}
	now := time.UnixMilli(vc.NowMs)
	b := &batch{tasks: make([]pending, len(vc.Tasks)), infos: make([]*TaskInfo, len(vc.Tasks)), errs: make([]error, len(vc.Tasks)), single: len(vc.Tasks) == 1}
	for i, vt := range vc.Tasks {
		task, opts := vt.task(t)
		p, err := c.build(task, opts, nil, now, nil)
		if err != nil {
			t.Fatalf("%s: task %d: %v", vc.Name, i, err)
		}
		p.index = i
		b.tasks[i] = p
	}
	var out vecExpect
	groups := c.route(b)
	for _, p := range b.tasks {
		m, err := wire.DecodeMessage(p.msg)
		if err != nil {
			t.Fatal(err)
		}
		o := vecTaskOut{PublicID: p.info.ID, StoredIDHex: hex.EncodeToString([]byte(p.id)), Partition: p.info.Partition,
			Tag: keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition).T, UniquenessID: p.unique,
			EnvelopeHex: hex.EncodeToString(m.Payload), Form: "full", MessageHex: hex.EncodeToString(p.msg)}
		if p.route != "" {
			k := hex.EncodeToString([]byte(p.route))
			o.RouteKeyHex = &k
		}
		if p.msg[0] == 0x91 || p.msg[0] == 0x92 {
			o.Form = "compact"
		}
		out.Tasks = append(out.Tasks, o)
	}
	call := func(name, when string, partition int, args []any) vecCall {
		// args as rcall sends them: evalsha, sha, numkeys, keys..., argv...
		if args[0] != "evalsha" {
			t.Fatalf("call %v", args[:2])
		}
		n := args[2].(int)
		vcall := vecCall{Script: name, When: when, Partition: partition}
		for _, k := range args[3 : 3+n] {
			vcall.Keys = append(vcall.Keys, string(argBytes(t, k)))
		}
		for _, a := range args[3+n:] {
			vcall.Argv = append(vcall.Argv, argOf(argBytes(t, a)))
		}
		return vcall
	}
	for _, g := range groups {
		k := keys.For(c.cfg.Prefix, g.queue, g.partition)
		for _, capped := range []bool{false, true} {
			g.capped = capped
			s, args := c.enqueueScript(k, g)
			when := "every call; the Go client's call while it knows the queue has no MaxDepth or GroupMaxDepth"
			if capped {
				when = "while the queue may have a MaxDepth or GroupMaxDepth (the Go client's first call to a queue)"
			}
			out.Calls = append(out.Calls, call(s.Name(), when, g.partition, evalArgs(s, enqueueKeys(k), args)))
		}
		if b.single && len(g.tasks) == 1 && g.tasks[0].plain() {
			pc := c.prepared(g.queue, g.partition)
			f := pc.newFrame()
			f.set(pc.shardKey(codes.None), g.tasks[0].msg)
			out.Calls = append(out.Calls, call(script.EnqueueOne.Name(),
				"a single Enqueue of a plain task, no tail shard known yet (T:s:-1)", g.partition, f.args))
		}
	}
	return out
}

// runCalls runs each of out's calls on rdb, emptied before each, and
// records its reply.
func runCalls(t *testing.T, rdb *redis.Client, out *vecExpect) {
	ctx := context.Background()
	scripts := map[string]*rcall.Script{}
	for _, s := range []*rcall.Script{script.Enqueue, script.EnqueueCapped, script.EnqueueOne, script.GetTask} {
		scripts[s.Name()] = s
	}
	for i, c := range out.Calls {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		args := make([]any, len(c.Argv))
		for j, a := range c.Argv {
			args[j] = a.bytes()
		}
		for again := range 2 {
			reply, err := scripts[c.Script].Run(ctx, rdb, c.Keys, args...).Result()
			if err != nil {
				t.Fatalf("%s: %v", c.Script, err)
			}
			if again == 0 {
				out.Calls[i].Reply = jsonValue(t, reply)
			} else {
				out.Calls[i].ReplyAgain = jsonValue(t, reply)
			}
		}
	}
}

// jsonValue is v as encoding/json reads it back: what a reply compares as.
func jsonValue(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// evalArgs is the EVALSHA's arguments of s with keys and args.
func evalArgs(s *rcall.Script, ks []string, args []any) []any {
	a := []any{"evalsha", s.Hash(), len(ks)}
	for _, k := range ks {
		a = append(a, k)
	}
	return append(a, args...)
}

// task makes the vector task's Task and options.
func (vt vecTask) task(t *testing.T) (*Task, []Option) {
	payload, err := base64.StdEncoding.DecodeString(vt.PayloadB64)
	if err != nil {
		t.Fatal(err)
	}
	var opts []Option
	add := func(o Option) { opts = append(opts, o) }
	if vt.Queue != "" {
		add(In(vt.Queue))
	}
	if vt.MaxRetry != nil {
		add(MaxRetry(*vt.MaxRetry))
	}
	if vt.TimeoutMs > 0 {
		add(Timeout(time.Duration(vt.TimeoutMs) * time.Millisecond))
	}
	if vt.DeadlineMs > 0 {
		add(Deadline(time.UnixMilli(vt.DeadlineMs)))
	}
	if vt.ProcessAtMs > 0 {
		add(ProcessAt(time.UnixMilli(vt.ProcessAtMs)))
	}
	if vt.ProcessInMs > 0 {
		add(ProcessIn(time.Duration(vt.ProcessInMs) * time.Millisecond))
	}
	if vt.RetentionMs > 0 {
		add(Retention(time.Duration(vt.RetentionMs) * time.Millisecond))
	}
	switch {
	case vt.UniqueBy != "":
		add(UniqueBy(vt.UniqueBy, time.Duration(vt.UniqueTTLMs)*time.Millisecond))
	case vt.UniqueTTLMs > 0:
		add(Unique(time.Duration(vt.UniqueTTLMs) * time.Millisecond))
	}
	if vt.UniqueUntilFinished {
		add(UniqueUntilFinished(time.Duration(vt.UniqueAfterMs) * time.Millisecond))
	}
	if vt.TaskID != "" {
		add(TaskID(vt.TaskID))
	}
	if vt.Group != "" {
		add(Group(vt.Group))
	}
	if len(vt.Headers) > 0 {
		add(Headers(vt.Headers))
	}
	return &Task{typ: vt.Type, payload: payload, raw: vt.Raw}, opts
}

// vecPartition is a partition choice: FNV-1a (32 bits) of the route key's
// bytes, modulo the count.
type vecPartition struct {
	KeyHex     string `json:"key_hex"`
	Key        string `json:"key,omitempty"`
	FNV1a32    uint32 `json:"fnv1a32"`
	Partitions int    `json:"partitions"`
	Partition  int    `json:"partition"`
}

// vecID is a task ID's public and stored forms.
type vecID struct {
	About      string `json:"about"`
	Public     string `json:"public"`
	StoredHex  string `json:"stored_hex"`
	EnqueuedAt *int64 `json:"enqueued_at_ms"` // what the ID says (a UUIDv7), or null
}

// vecScript is a script a producer calls, as Redis caches it: its source resolved
// from lua/engine/ (docs/protocol.md, "Loading the scripts").
type vecScript struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	SHA1  string `json:"sha1"`
	Bytes int    `json:"bytes"`
}

func scriptVectors() []vecScript {
	var out []vecScript
	for _, s := range []*rcall.Script{script.Enqueue, script.EnqueueCapped, script.EnqueueOne, script.GetTask} {
		out = append(out, vecScript{Name: s.Name(), File: "lua/engine/" + s.Name() + ".lua", SHA1: s.Hash(), Bytes: len(s.Source())})
	}
	return out
}

func partitionCases() []vecPartition {
	var out []vecPartition
	for _, k := range []string{"tenant-7", "order-42", "email:send:5d41402abc4b2a76b9719d911017c592", "a", "", "ü-grüße"} {
		for _, n := range []int{2, 4, 8, 16, 1024} {
			out = append(out, vecPartition{Key: k, Partitions: n})
		}
	}
	out = append(out, vecPartition{KeyHex: hex.EncodeToString([]byte(wire.StoredID("019b7708-6a7b-7cc4-9f00-112233445566"))), Partitions: 8})
	return out
}

func fnv1a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

func (v vecPartition) run(t *testing.T) vecPartition {
	key := []byte(v.Key)
	if v.KeyHex != "" {
		var err error
		if key, err = hex.DecodeString(v.KeyHex); err != nil {
			t.Fatal(err)
		}
	}
	out := vecPartition{KeyHex: hex.EncodeToString(key), Key: v.Key, Partitions: v.Partitions,
		FNV1a32: fnv1a(key), Partition: layout.Pick(string(key), v.Partitions)}
	if int(out.FNV1a32%uint32(v.Partitions)) != out.Partition {
		t.Errorf("layout.Pick(%q, %d) is not FNV-1a mod n", key, v.Partitions)
	}
	return out
}

func idCases() []vecID {
	return []vecID{
		{About: "a generated UUIDv7: 16 raw bytes, its first 48 bits the unix ms", Public: "019b7708-6a7b-7cc4-8d2e-3f4a5b6c7d8e"},
		{About: "a caller's ID: stored as given", Public: "order-42"},
		{About: "a caller's ID of exactly 16 bytes: 0x00 appended", Public: "0123456789abcdef"},
		{About: "canonical lowercase UUID text (any version): packed to 16 bytes", Public: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		{About: "UUID text in upper case is not canonical: stored as given", Public: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8"},
		{About: "a caller's ID of 17 bytes: as given", Public: "0123456789abcdefg"},
	}
}

func (v vecID) run() vecID {
	stored := wire.StoredID(v.Public)
	out := vecID{About: v.About, Public: v.Public, StoredHex: hex.EncodeToString([]byte(stored))}
	if ms, ok := wire.IDTime(stored); ok {
		out.EnqueuedAt = &ms
	}
	return out
}

// TestProtocolVectors checks that the Go code makes, byte for byte, what
// testdata/protocol/*.json say: every enqueue vector's stored IDs,
// partitions, stored payloads, messages and script calls, every partition
// choice and every ID's two forms. -update rewrites the files.
func TestProtocolVectors(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	if *updateVectors {
		var cases []vecCase
		for _, vc := range vectorCases() {
			vc.Expect = runVector(t, vc)
			runCalls(t, rdb, &vc.Expect)
			cases = append(cases, vc)
		}
		writeVectors(t, "enqueue.json", vecFile[vecCase]{About: "Enqueue vectors: a task, its options and the client's config, with a fixed time, " +
			"generated IDs and nonces, and what a client makes of them (docs/protocol.md, \"Golden vectors\")", Cases: cases})
		var parts []vecPartition
		for _, v := range partitionCases() {
			parts = append(parts, v.run(t))
		}
		writeVectors(t, "partitions.json", vecFile[vecPartition]{About: "The partition of a task placed by a route key: FNV-1a (32 bits) of the key's bytes, modulo the partition count", Cases: parts})
		var ids []vecID
		for _, v := range idCases() {
			ids = append(ids, v.run())
		}
		writeVectors(t, "ids.json", vecFile[vecID]{About: "Task IDs: the public form users see and the stored form messages carry", Cases: ids})
		writeVectors(t, "scripts.json", vecFile[vecScript]{About: "The enqueue scripts as EVALSHA names them: the SHA-1 of each resolved source (includes inlined)", Cases: scriptVectors()})
	}
	var scripts vecFile[vecScript]
	readVectors(t, "scripts.json", &scripts)
	if got := scriptVectors(); !slices.Equal(got, scripts.Cases) {
		t.Errorf("an enqueue script or one of its includes changed: clients that vendor the scripts must take the new sources "+
			"(go test ./queue/ -run TestProtocolVectors -update rewrites scripts.json)\ngot  %+v\nwant %+v", got, scripts.Cases)
	}
	var enq vecFile[vecCase]
	readVectors(t, "enqueue.json", &enq)
	if len(enq.Cases) < 20 {
		t.Fatalf("enqueue.json holds %d cases", len(enq.Cases))
	}
	for _, vc := range enq.Cases {
		t.Run(vc.Name, func(t *testing.T) {
			got := runVector(t, vc)
			runCalls(t, rdb, &got)
			want, _ := json.MarshalIndent(vc.Expect, "", "  ")
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			if !bytes.Equal(want, gotJSON) {
				t.Errorf("the Go client no longer makes this vector (a wire format change?)\ngot:\n%s\nwant:\n%s", gotJSON, want)
			}
			checkVector(t, vc)
		})
	}
	var parts vecFile[vecPartition]
	readVectors(t, "partitions.json", &parts)
	for _, v := range parts.Cases {
		if got := v.run(t); got != v {
			t.Errorf("partition of %q: got %+v, want %+v", v.KeyHex, got, v)
		}
	}
	var ids vecFile[vecID]
	readVectors(t, "ids.json", &ids)
	for _, v := range ids.Cases {
		got, _ := json.Marshal(v.run())
		if want, _ := json.Marshal(v); !bytes.Equal(got, want) {
			t.Errorf("ID %q: got %s, want %s", v.Public, got, want)
		}
		stored, _ := hex.DecodeString(v.StoredHex)
		if back := wire.PublicID(string(stored)); back != v.Public {
			t.Errorf("PublicID(%x) = %q, want %q", stored, back, v.Public)
		}
	}
}

// checkVector checks what a reader makes of a vector: the message decodes
// to the task, and the stored payload opens to the payload.
func checkVector(t *testing.T, vc vecCase) {
	codec := envelope.Codec{}
	if r := vc.Config.KeyRing; r != nil {
		codec.Ring = &envelope.KeyRing{Current: r.Current, Keys: map[string][]byte{}}
		for id, k := range r.Keys {
			codec.Ring.Keys[id], _ = base64.StdEncoding.DecodeString(k)
		}
	}
	if d := vc.Config.Dictionary; d != nil {
		b, _ := base64.StdEncoding.DecodeString(d.BytesB64)
		codec.Dicts = &envelope.Dicts{Load: func(id string) ([]byte, error) {
			if id == d.ID {
				return b, nil
			}
			return nil, nil
		}}
	}
	for i, o := range vc.Expect.Tasks {
		msg, _ := hex.DecodeString(o.MessageHex)
		m, err := wire.DecodeMessage(msg)
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		stored, _ := hex.DecodeString(o.StoredIDHex)
		if m.ID != string(stored) || m.Type != vc.Tasks[i].Type || m.Key != vc.Tasks[i].Group {
			t.Errorf("task %d: message holds %x %q %q", i, m.ID, m.Type, m.Key)
		}
		payload, err := codec.Open(m.Payload, m.ID, envelope.Payload, 0)
		want, _ := base64.StdEncoding.DecodeString(vc.Tasks[i].PayloadB64)
		if err != nil || !bytes.Equal(payload, want) {
			t.Errorf("task %d: the stored payload opens to %x, %v; want %x", i, payload, err, want)
		}
	}
}

func writeVectors(t *testing.T, name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vectorDir, name), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readVectors(t *testing.T, name string, v any) {
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatalf("%v (go test -run TestProtocolVectors -update ./queue/ writes it)", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
