package dashboard

import (
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
)

// TestBasicAuthComparesBoth: a basic-auth request has its user and its
// password compared, both, whatever the user: a short-circuit would tell
// by its time whether the user was right. It counts the constant-time
// comparisons; no timing is measured.
func TestBasicAuthComparesBoth(t *testing.T) {
	t.Parallel()
	// authenticate reads no Redis: the client is never used
	insp, err := queue.NewInspector(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(insp, Options{BasicAuth: &BasicAuth{User: "ops", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	d := h.(*server)
	calls := 0
	compare := d.creds.compare
	d.creds.compare = func(a, b []byte) int { calls++; return compare(a, b) }
	for _, c := range []struct {
		user, pass string
		ok         bool
	}{{"ops", "s3cret", true}, {"nobody", "s3cret", false}, {"ops", "nope", false}, {"nobody", "nope", false}, {"", "", false}} {
		calls = 0
		r := httptest.NewRequest("GET", "/", nil)
		r.SetBasicAuth(c.user, c.pass)
		if _, _, ok := d.authenticate(r); ok != c.ok || calls != 2 {
			t.Errorf("%q:%q: ok %v after %d comparisons, want %v after 2", c.user, c.pass, ok, calls, c.ok)
		}
	}
}
