package script

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/scriptsrc"
	"github.com/shardq/shardq/internal/wire"
	_ "github.com/shardq/shardq/lua" // sets scriptsrc.FS
)

// includeScript resolves body as a script of its own that may include
// any of lua's includes, as the engine's scripts include them.
func includeScript(t *testing.T, name, body string) *rcall.Script {
	t.Helper()
	fsys := fstest.MapFS{"engine/" + name + ".lua": {Data: []byte(body)}}
	includes, err := fs.Glob(scriptsrc.FS, "include/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	own, err := fs.Glob(scriptsrc.FS, "engine/include/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	includes = append(includes, own...)
	for _, file := range includes {
		b, err := fs.ReadFile(scriptsrc.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		fsys[file] = &fstest.MapFile{Data: b}
	}
	src, err := rcall.Resolve(fsys, "engine/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return rcall.NewScript(name, src)
}

// TestMessageHead runs include/msg_head.lua's msg_head and
// include/msg_keyed.lua's msg_keyed, as the scripts include them, over
// messages in both forms: a compact message has no key, a full one has the
// key it was given, and anything else is a "bad:" ID. Each message takes
// the path it should: msgpack_short_head's, or the general readers'.
func TestMessageHead(t *testing.T) {
	t.Parallel()
	script := includeScript(t, "head", "--@include msg_keyed\n"+
		"local id, key, bad = msg_head(ARGV[1])\n"+
		"return {id, key, bad and 1 or 0, msg_keyed(ARGV[1]) and 1 or 0, msgpack_short_head(ARGV[1]) and 1 or 0}\n")
	rdb := redistest.Start(t).Client(t)

	id := wire.NewID()
	payload := []byte("\xa0\xa3key") // bytes that would read as a key if the payload were taken for fields
	for _, c := range []struct {
		name    string
		msg     *wire.Message
		full    bool
		wantKey string
		short   bool // msgpack_short_head reads it
	}{
		{"compact raw", &wire.Message{ID: id, Type: "bench", Payload: payload, Raw: true, MaxRetry: wire.CompactMaxRetry}, false, "", true},
		{"compact msgpack", &wire.Message{ID: id, Type: "t", Payload: payload, MaxRetry: wire.CompactMaxRetry}, false, "", true},
		{"compact, no payload", &wire.Message{ID: id, Type: "t", MaxRetry: wire.CompactMaxRetry}, false, "", true},
		{"compact, a caller's long ID", &wire.Message{ID: string(make([]byte, 40)) + "x", Type: "t", MaxRetry: wire.CompactMaxRetry}, false, "", false},
		{"full, no key", &wire.Message{ID: id, Type: "bench", Payload: payload, Raw: true, MaxRetry: wire.CompactMaxRetry}, true, "", true},
		{"full, keyed", &wire.Message{ID: id, Key: "tenant-1", Type: "bench", Payload: payload, MaxRetry: wire.CompactMaxRetry}, false, "tenant-1", false},
		{"full, other retries", &wire.Message{ID: id, Type: "bench", Payload: payload, MaxRetry: 3}, false, "", true},
	} {
		msg := c.msg.AppendEncode(nil, c.full)
		if compact := msg[0] == 0x91 || msg[0] == 0x92; compact != strings.HasPrefix(c.name, "compact") {
			t.Fatalf("%s: encoded with header %#x", c.name, msg[0])
		}
		got, err := script.Run(context.Background(), rdb, nil, msg).Slice()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		keyed := int64(0)
		if c.wantKey != "" {
			keyed = 1
		}
		short := int64(0)
		if c.short {
			short = 1
		}
		if got[0] != c.msg.ID || got[1] != c.wantKey || got[2] != int64(0) || got[3] != keyed || got[4] != short {
			t.Errorf("%s (% x): msg_head, msg_keyed, short head = %q; want id %q, key %q, keyed %d, short %d", c.name, msg[:4], got, c.msg.ID, c.wantKey, keyed, short)
		}
	}
	for _, bad := range []string{"\x92\xa0", "\x92", "\x91\xa5ab", "not a message"} {
		got, err := script.Run(context.Background(), rdb, nil, bad).Slice()
		if err != nil || got[2] != int64(1) {
			t.Errorf("%q: msg_head = %q, %v; want a bad: ID", bad, got, err)
		}
	}
}

// msgpackReaders runs every reader of include/msgpack_*.lua at ARGV[2] of
// ARGV[1], and the message readers built on them over the whole of
// ARGV[1]. A reader that finds nothing answers -1 (no position) or false
// (no string); a Lua error fails the call.
const msgpackReaders = `--@include msgpack_str
--@include msgpack_skip
--@include msgpack_array
--@include msgpack_map
--@include msgpack_short_head
--@include msg_head
--@include msg_unique
--@include msg_flow
local m, pos = ARGV[1], tonumber(ARGV[2])
local s, sn = msgpack_str(m, pos)
local an, ap = msgpack_array(m, pos)
local mn, mp = msgpack_map(m, pos)
local id, key, bad = msg_head(m)
return {s or false, sn or -1, msgpack_skip(m, pos) or -1, an or -1, ap or -1, mn or -1, mp or -1,
  msgpack_short_head(m) or -1, id, key, bad and 1 or 0, msg_unique(m), msg_flow(m)}
`

// msgpackReply is what msgpackReaders answers, named.
type msgpackReply struct {
	str               any // the string, or nil
	strNext, skip     int64
	arrayN, arrayNext int64
	mapN, mapNext     int64
	shortHead         int64
	id, key           string
	bad               bool
	unique, flow      string
}

func runMsgpackReaders(t *testing.T, s *rcall.Script, rdb redis.UniversalClient, m string, pos int) msgpackReply {
	t.Helper()
	v, err := s.Run(context.Background(), rdb, nil, m, pos).Slice()
	if err != nil {
		t.Fatalf("% x at %d: the readers failed: %v", m, pos, err)
	}
	return msgpackReply{v[0], v[1].(int64), v[2].(int64), v[3].(int64), v[4].(int64), v[5].(int64), v[6].(int64),
		v[7].(int64), v[8].(string), v[9].(string), v[10] == int64(1), v[11].(string), v[12].(string)}
}

// TestMsgpackValues runs the readers of include/msgpack_*.lua over seed
// values, whole, truncated and foreign: a reader answers the value and the
// position after it, or nothing, and never fails the script.
func TestMsgpackValues(t *testing.T) {
	t.Parallel()
	script := includeScript(t, "msgpack", msgpackReaders)
	rdb := redistest.Start(t).Client(t)
	const none = -1
	for _, c := range []struct {
		in         string
		str        any
		strNext    int64
		skip       int64
		arr, arrAt int64
		mp, mpAt   int64
	}{
		{"\xa3abc", "abc", 5, 5, none, none, none, none},
		{"\xa0", "", 2, 2, none, none, none, none},
		{"\xd9\x03abc", "abc", 6, 6, none, none, none, none},
		{"\xda\x00\x03abc", "abc", 7, 7, none, none, none, none},
		{"\xdb\x00\x00\x00\x01a", nil, none, 7, none, none, none, none}, // str32: skipped, never read
		{"\xa5ab", nil, none, 7, none, none, none, none},                // body cut: skip points past the end
		{"\xd9", nil, none, none, none, none, none, none},               // length cut
		{"\xda\x00", nil, none, none, none, none, none, none},
		{"\xc4\x02ab", nil, none, 5, none, none, none, none},
		{"\xc5\x00", nil, none, none, none, none, none, none},
		{"\x05", nil, none, 2, none, none, none, none},
		{"\xff", nil, none, 2, none, none, none, none},
		{"\xcd\x01\x02", nil, none, 4, none, none, none, none},
		{"\xd3\x01", nil, none, 10, none, none, none, none},
		{"\xc2", nil, none, 2, none, none, none, none},
		{"\xc0", nil, none, 2, none, none, 0, 2}, // nil reads as an empty map
		{"\x93\x01", nil, none, none, 3, 2, none, none},
		{"\x90", nil, none, none, 0, 2, none, none},
		{"\xdc\x00\x10", nil, none, none, 16, 4, none, none},
		{"\xdc\x00", nil, none, none, none, none, none, none},
		{"\xdd\x00\x00\x00\x05", nil, none, none, 5, 6, none, none},
		{"\xdd\x00\x00", nil, none, none, none, none, none, none},
		{"\x82", nil, none, none, none, none, 2, 2},
		{"\xde\x00\x01", nil, none, none, none, none, 1, 4},
		{"\xde\x00", nil, none, none, none, none, none, none},
		{"\xc1shardq:dummy", nil, none, none, none, none, none, none},
		{"\x00key", nil, none, 2, none, none, none, none}, // a fair queue's marker
		{"", nil, none, none, none, none, none, none},
	} {
		got := runMsgpackReaders(t, script, rdb, c.in, 1)
		want := msgpackReply{c.str, c.strNext, c.skip, c.arr, c.arrAt, c.mp, c.mpAt,
			got.shortHead, got.id, got.key, got.bad, got.unique, got.flow}
		if got != want {
			t.Errorf("% x: got %+v, want %+v", c.in, got, want)
		}
		if !got.bad || got.unique != "" || got.flow != "" {
			t.Errorf("% x read as a message: %+v", c.in, got)
		}
	}
	// a position past the end reads nothing
	if got := runMsgpackReaders(t, script, rdb, "\xa1a", 9); got.str != nil || got.skip != none || got.arrayN != none || got.mapN != none {
		t.Errorf("past the end: %+v", got)
	}
}

// TestMsgpackMessages runs the message readers over messages the Go side
// encodes, then over every prefix of each and over random bytes: a whole
// message reads as encoded; a cut or foreign one reads as much as is
// there, or as nothing, and never fails the script.
func TestMsgpackMessages(t *testing.T) {
	t.Parallel()
	script := includeScript(t, "msgpack", msgpackReaders)
	rdb := redistest.Start(t).Client(t)
	id := wire.NewID()
	long := strings.Repeat("k", 300) // a str16 key
	msgs := []struct {
		name string
		msg  wire.Message
		full bool
	}{
		{"compact", wire.Message{ID: id, Type: "t", Payload: []byte("\x93\x01\x02\x03"), MaxRetry: wire.CompactMaxRetry}, false},
		{"compact raw", wire.Message{ID: id, Type: "t", Payload: []byte("\xa1x"), Raw: true, MaxRetry: wire.CompactMaxRetry}, false},
		{"full", wire.Message{ID: id, Type: "t", Payload: []byte("p"), MaxRetry: wire.CompactMaxRetry}, true},
		{"keyed", wire.Message{ID: "chosen", Key: long, Type: "t", MaxRetry: 3, Timeout: 70000, Deadline: -5}, false},
		{"unique", wire.Message{ID: id, Key: "k", Type: "t", MaxRetry: 1, Unique: "u:1", EnqueuedAt: 1 << 40}, false},
		{"headers", wire.Message{ID: id, Type: "t", MaxRetry: 2, Unique: "u", Headers: map[string]string{"a": "b", "tenant": long}}, false},
		{"flow", wire.Message{ID: id, Key: "k", Type: "t", Payload: make([]byte, 300), MaxRetry: 2, Flow: "b:home:xyz"}, false},
		{"flow, headers", wire.Message{ID: id, Type: "t", MaxRetry: 2, Unique: "u", Headers: map[string]string{"a": "b"}, Flow: "c:home:1:2"}, false},
	}
	for _, c := range msgs {
		enc := string(c.msg.AppendEncode(nil, c.full))
		got := runMsgpackReaders(t, script, rdb, enc, 1)
		if got.bad || got.id != c.msg.ID || got.key != c.msg.Key || got.unique != c.msg.Unique || got.flow != c.msg.Flow {
			t.Errorf("%s: read %+v; want id %q, key %q, unique %q, flow %q", c.name, got, c.msg.ID, c.msg.Key, c.msg.Unique, c.msg.Flow)
		}
		for n := range len(enc) {
			cut := runMsgpackReaders(t, script, rdb, enc[:n], 1)
			if !cut.bad && cut.id != c.msg.ID {
				t.Errorf("%s cut at %d: ID %q", c.name, n, cut.id)
			}
			if cut.unique != "" && cut.unique != c.msg.Unique || cut.flow != "" && cut.flow != c.msg.Flow {
				t.Errorf("%s cut at %d: unique %q, flow %q", c.name, n, cut.unique, cut.flow)
			}
		}
	}
	rng := rand.New(rand.NewPCG(43, 8))
	for range 300 {
		b := make([]byte, rng.IntN(48))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[0] = 0x90 + byte(rng.IntN(16)) // an array, so the readers go deeper
		}
		runMsgpackReaders(t, script, rdb, string(b), 1+rng.IntN(len(b)+1))
	}
}
