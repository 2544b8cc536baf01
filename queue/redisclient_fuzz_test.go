package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardq/shardq/internal/redact"
)

// FuzzNewRedisClient: no URL crashes NewRedisClient, one it refuses is
// ErrInvalid, and its message shows none of the URL's secrets
// (those redact.Secrets finds: the password, secret options) unless the
// same bytes show when the secret is not there. It only builds clients:
// none dials.
func FuzzNewRedisClient(f *testing.F) {
	for _, u := range []string{
		"redis://u:s3cret@127.0.0.1:6379/0?dial_timeout=2s", "redis://u:s3cret%zz@127.0.0.1:6379",
		"rediss+cluster://u:s3cret@127.0.0.1:7000?addr=127.0.0.1:7001", "unix:///tmp/x.sock?db=2&password=s3cret",
		"redis+sentinel://127.0.0.1:26379?master_name=m&password=s3cret&bogus=1", "redis://:s3cret@[::1", "http://x",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		rdb, err := NewRedisClient(raw)
		if err == nil {
			_ = rdb.Close()
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("NewRedisClient(%q): %v is not ErrInvalid", raw, err)
		}
		// what a message says whatever the URL: a secret among it tells nothing
		const fixed = "queue: invalid Redis URL: does not parse: scheme: want redis, rediss, unix, redis+cluster or redis+sentinel"
		shown := fmt.Sprintf("%q", redact.URL(raw)) // as the message quotes it

		for _, s := range redact.Secrets(raw) {
			if len(s) >= 4 && strings.Contains(err.Error(), s) && !strings.Contains(shown, s) &&
				!strings.Contains(fixed, s) {
				t.Fatalf("NewRedisClient(%q): %v shows the secret %q", raw, err, s)
			}
		}
	})
}
