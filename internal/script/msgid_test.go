package script

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/scriptsrc"
	"github.com/shardq/shardq/internal/wire"
	_ "github.com/shardq/shardq/lua" // sets scriptsrc.FS
)

// TestMessageHead runs include/msgid.lua's msg_head and
// include/pendingref.lua's msg_keyed, as the scripts include them, over
// messages in both forms: a compact message has no key, a full one has the
// key it was given, and anything else is a "bad:" ID.
func TestMessageHead(t *testing.T) {
	fsys := fstest.MapFS{"head.lua": {Data: []byte("--@include pendingref\n" +
		"local id, key, bad = msg_head(ARGV[1])\n" +
		"return {id, key, bad and 1 or 0, msg_keyed(ARGV[1]) and 1 or 0}\n")}}
	includes, err := fs.Glob(scriptsrc.FS, "include/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range includes {
		b, err := fs.ReadFile(scriptsrc.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	src, err := rcall.Resolve(fsys, "head")
	if err != nil {
		t.Fatal(err)
	}
	script := rcall.NewScript("head", src)
	rdb := redistest.Start(t).Client(t)

	id := wire.NewID()
	payload := []byte("\xa0\xa3key") // bytes that would read as a key if the payload were taken for fields
	for _, c := range []struct {
		name    string
		msg     *wire.Message
		full    bool
		wantKey string
	}{
		{"compact raw", &wire.Message{ID: id, Type: "bench", Payload: payload, Raw: true, MaxRetry: wire.CompactMaxRetry}, false, ""},
		{"compact msgpack", &wire.Message{ID: id, Type: "t", Payload: payload, MaxRetry: wire.CompactMaxRetry}, false, ""},
		{"compact, no payload", &wire.Message{ID: id, Type: "t", MaxRetry: wire.CompactMaxRetry}, false, ""},
		{"compact, a caller's long ID", &wire.Message{ID: string(make([]byte, 40)) + "x", Type: "t", MaxRetry: wire.CompactMaxRetry}, false, ""},
		{"full, no key", &wire.Message{ID: id, Type: "bench", Payload: payload, Raw: true, MaxRetry: wire.CompactMaxRetry}, true, ""},
		{"full, keyed", &wire.Message{ID: id, Key: "tenant-1", Type: "bench", Payload: payload, MaxRetry: wire.CompactMaxRetry}, false, "tenant-1"},
		{"full, other retries", &wire.Message{ID: id, Type: "bench", Payload: payload, MaxRetry: 3}, false, ""},
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
		if got[0] != c.msg.ID || got[1] != c.wantKey || got[2] != int64(0) || got[3] != keyed {
			t.Errorf("%s (% x): msg_head, msg_keyed = %q; want id %q, key %q, keyed %d", c.name, msg[:4], got, c.msg.ID, c.wantKey, keyed)
		}
	}
	for _, bad := range []string{"\x92\xa0", "\x92", "\x91\xa5ab", "not a message"} {
		got, err := script.Run(context.Background(), rdb, nil, bad).Slice()
		if err != nil || got[2] != int64(1) {
			t.Errorf("%q: msg_head = %q, %v; want a bad: ID", bad, got, err)
		}
	}
}
