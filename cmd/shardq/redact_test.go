package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardq/shardq/worker"
)

// TestSecretsNeverPrinted: a Redis URL of any form with a secret in it,
// given by flag or by environment, that the command cannot use is
// refused with its secret hidden (a bad %-escape was printed whole, and
// a Sentinel URL's password= option shown); so is a handler URL, in
// the flag's error and in the task's error a failed POST leaves.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	urls := []string{
		"redis://u:s3cret%zz@127.0.0.1:6379",
		"redis://u:s3c/ret@127.0.0.1:6379",
		"redis://:s3cret@127.0.0.1:1/abc",
		"rediss://u:s3cret@127.0.0.1:6379?bogus=1",
		"unix://u:s3cret@/tmp/x.sock?db=x",
		"unix:///tmp/x.sock?password=s3cret&bogus=1",
		"redis+cluster://u:s3cret@127.0.0.1:70000",
		"redis+sentinel://127.0.0.1:26379?password=s3cret",
		"redis+sentinel://127.0.0.1:26379?master_name=m&password=s3cret&bogus=1",
		"rediss+sentinel://u:s3cret@127.0.0.1:26379?master_name=m&sentinel_password=s3cret&db=x",
		"http://u:s3cret@127.0.0.1:6379",
	}
	for _, u := range urls {
		for _, args := range [][]string{{"stats", "--redis", u}, {"enqueue", "--type", "t", "--redis", u}} {
			code, out, errOut := run(t, nil, args...)
			if code == exitOK || strings.Contains(out+errOut, secret) {
				t.Errorf("%q: exit %d, output shows the secret or no error:\n%s%s", args, code, out, errOut)
			}
		}
		code, out, errOut := run(t, map[string]string{"SHARDQ_REDIS_URL": u}, "stats")
		if code == exitOK || strings.Contains(out+errOut, secret) {
			t.Errorf("SHARDQ_REDIS_URL=%q: exit %d, output shows the secret or no error:\n%s%s", u, code, out, errOut)
		}
	}
	for _, h := range []string{"t=http:https://u:s3cret@[::1", "t=http:ftp://u:s3cret@host/x", "t=http:https://host/x?token=s3cret%zz", "t=http:/nohost?token=s3cret"} {
		code, out, errOut := run(t, nil, "worker", "--redis", "redis://127.0.0.1:1", "--handler", h)
		if code == exitOK || strings.Contains(out+errOut, secret) {
			t.Errorf("--handler %q: exit %d, output shows the secret or no error:\n%s%s", h, code, out, errOut)
		}
	}
}

// TestPostErrorHidesSecrets: the error a failed POST returns becomes the
// task's last error, kept in Redis and shown by the dashboard: it names
// the URL with its password and token hidden, whether the server
// answered with an error or could not be reached.
func TestPostErrorHidesSecrets(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
	}))
	defer srv.Close()
	answered := strings.Replace(srv.URL, "http://", "http://hook:s3cret@", 1) + "/hook?token=s3cret"
	for _, u := range []string{answered, "http://hook:s3cret@127.0.0.1:1/hook?token=s3cret"} {
		b := &builtin{resolved: resolved{typ: "t", url: u}, client: srv.Client()}
		err := b.post(context.Background(), &worker.Task{ID: "id", Type: "t"}, []byte("{}"), "application/json")
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("POST %s: error %v, want one that hides the secrets", u, err)
		}
	}
}
