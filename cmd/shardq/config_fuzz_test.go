package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redact"
)

// workerConfigSeeds are config files as operators write them, and
// broken ones: a typo, a bad weight, a bad duration, JSON cut short.
var workerConfigSeeds = []string{
	`{"redis": "redis://:pw@localhost:6379", "prefix": "shardq", "queues": {"email": 3, "tenant:*": 1},
	  "strict_priority": true, "concurrency": 20, "shutdown_timeout": "30s",
	  "handlers": {"resize": {"exec": ["convert", "--fast"], "timeout": "2m", "retry_exit_code": 75},
	               "notify": {"http": "https://hooks.example.com/x", "json": true, "headers": {"Authorization": "Bearer S3cr3tHdr"}, "retry_in": "1m"}}}`,
	`{"handler": {}}`,
	`{"queues": {"a": 0}}`,
	`{"queues": {"{bad}": 1}}`,
	`{"shutdown_timeout": 5}`,
	`{"handlers": {"t": {"exec": ["cat"], "headers": {"Authorization": "Bearer S3cr3tHdr`,
	`{} {}`,
}

// FuzzWorkerConfig: no config file crashes its parse; one it accepts has
// valid queue names or patterns with weights of 1 or more; a syntax error
// quotes none of the bytes, so not the handler header or the Redis
// password the seeds carry. (Other errors name fields and durations.)
func FuzzWorkerConfig(f *testing.F) {
	for _, s := range workerConfigSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		wf, err := parseWorkerFile("c.json", b)
		if err != nil {
			for _, secret := range []string{"S3cr3tHdr", ":pw@"} {
				if strings.Contains(err.Error(), "syntax error") && strings.Contains(err.Error(), secret) {
					t.Fatalf("parse %q: %v quotes a secret", b, err)
				}
			}
			return
		}
		for q, w := range wf.Queues {
			if checkQueueOrPattern(q) != nil || w < 1 {
				t.Fatalf("parse %q accepted queue %q of weight %d", b, q, w)
			}
		}
	})
}

// TestWorkerConfigQuotesNoSecret: a syntax error inside a handler's
// header, or a Redis URL's password, says where it is, not what it met:
// encoding/json's message quoted the character, which is the secret's.
func TestWorkerConfigQuotesNoSecret(t *testing.T) {
	for _, b := range []string{
		"{\"handlers\": {\"t\": {\"http\": \"http://x\", \"headers\": {\"Authorization\": \"Bearer S\x01\"}}}}",
		"{\"redis\": \"redis://:S\x02@localhost\"}",
		`{"redis": "redis://:pw@localhost", "queues": S}`,
	} {
		_, err := parseWorkerFile("c.json", []byte(b))
		if err == nil || !strings.Contains(err.Error(), "syntax error at byte") || strings.ContainsAny(err.Error(), "'\x01\x02") {
			t.Errorf("parse %q: %v, want a syntax error by offset that quotes nothing it met", b, err)
		}
	}
}

// FuzzHandlerFlag: no --handler value crashes its parse; an exec handler
// has a command and an http one an http(s) URL with a host; an error
// shows no secret of the URL (redact.Secrets) beyond what the redacted
// URL itself shows.
func FuzzHandlerFlag(f *testing.F) {
	for _, s := range []string{
		"email:send=exec:./send-mail --fast", `t=exec:sh -c 'echo "$0"' x`, "t=exec:", `t=exec:"unterminated`,
		"notify=http:https://hooks.example.com/x", "t=http:https://u:S3cr3t@[::1", "t=http:ftp://u:S3cr3t@host/x",
		"t=http:https://host/x?token=S3cr3t%zz", "=exec:cat", "t=ftp:x", "t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, spec, err := parseHandlerFlag(s)
		_, rest, _ := strings.Cut(s, "=")
		kind, arg, _ := strings.Cut(rest, ":")
		if err != nil {
			if kind != "http" {
				return
			}
			shown := fmt.Sprintf("%q", redact.URL(arg))
			for _, secret := range redact.Secrets(arg) {
				if len(secret) >= 4 && strings.Contains(err.Error(), secret) && !strings.Contains(shown, secret) &&
					!strings.Contains("--handler : want 'type=exec:command args...' or 'type=http:URL' http:// or https:// and a host", secret) {
					t.Fatalf("parseHandlerFlag(%q): %v shows the secret %q", s, err, secret)
				}
			}
			return
		}
		switch {
		case typ == "":
			t.Fatalf("parseHandlerFlag(%q) accepted no type", s)
		case spec.HTTP == "" && len(spec.Exec) == 0:
			t.Fatalf("parseHandlerFlag(%q) accepted no command and no URL", s)
		case spec.HTTP != "" && checkURL(spec.HTTP) != nil:
			t.Fatalf("parseHandlerFlag(%q) accepted URL %q", s, spec.HTTP)
		}
	})
}

// FuzzCheckJSON: no --payload crashes the check that it is one JSON
// value, and what it accepts encoding/json reads.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"to": "ann@example.com"}`, `[1, 2`, `1 2`, `"x"`, ``, `{"a":` + strings.Repeat("[", 100)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkJSON(b) == nil && !json.Valid(b) {
			t.Fatalf("checkJSON accepted %q", b)
		}
	})
}
