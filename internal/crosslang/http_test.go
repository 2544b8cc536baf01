package crosslang

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/httpapi"
	"github.com/shardq/shardq/queue"
)

// TestHTTPMatrix: the HTTP API's tasks run on a Go worker as contract.md
// says, each once, with the payload its request sent.
func TestHTTPMatrix(t *testing.T) {
	t.Parallel()
	runMatrix(t, "http", &httpDriver{})
}

// httpDriver enqueues through the HTTP API (internal/httpapi), as
// `shardq serve` serves it. Compression and the key ring are the server's
// settings, so it runs three servers over one redis-server: plain, zstd,
// and encrypting.
type httpDriver struct {
	plain, small, sealed string // base URLs
}

const httpToken = "crosslang-token"

func (d *httpDriver) start(t *testing.T, e env) {
	opts, err := redis.ParseURL(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	serve := func(cfg queue.Config) string {
		cfg.Prefix = e.Prefix
		client, err := queue.NewClient(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		insp, err := queue.NewInspector(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		h, err := httpapi.New(client, insp, httpapi.Options{Token: httpToken})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	d.plain = serve(queue.Config{})
	d.small = serve(queue.Config{Compression: "small"})
	d.sealed = serve(queue.Config{KeyRing: e.Ring})
}

func (d *httpDriver) enqueue(ctx context.Context, t *testing.T, e env) report {
	d.start(t, e)
	var rep report
	add := func(c, id string, payload []byte) {
		rep.Tasks = append(rep.Tasks, struct {
			Case    string `json:"case"`
			ID      string `json:"id"`
			Payload []byte `json:"payload_base64"`
		}{c, id, payload})
	}
	one := func(base, c string, payload []byte, extra string, header ...string) {
		var info struct {
			ID string `json:"id"`
		}
		body := fmt.Sprintf(`{"type":"echo","payload_base64":%q,"retention_ms":600000%s}`, b64(payload), extra)
		if code := d.call(ctx, t, "POST", base+"/v1/queues/"+e.Queue+"/tasks", body, &info, header...); code != http.StatusCreated {
			t.Fatalf("%s: %d", c, code)
		}
		add(c, info.ID, payload)
	}
	one(d.plain, "plain", []byte(`{"case":"plain","n":1}`), "")
	one(d.plain, "delayed", []byte(`{"case":"delayed"}`), `,"delay_ms":1000`)
	one(d.plain, "fair", []byte(`{"case":"fair"}`), `,"group":"tenant-a"`)
	one(d.small, "compressed", []byte(strings.Repeat("compressible text; ", 256)), "")
	one(d.sealed, "encrypted", []byte("secret "+encryptedMarker), "")
	dupID := "dup-" + e.Tag
	one(d.plain, "duplicate", []byte("first"), "", "Idempotency-Key", dupID)
	var again struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
	}
	code := d.call(ctx, t, "POST", d.plain+"/v1/queues/"+e.Queue+"/tasks",
		fmt.Sprintf(`{"type":"echo","payload_base64":%q}`, b64([]byte("second"))), &again, "Idempotency-Key", dupID)
	rep.Checks = append(rep.Checks, struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}{"duplicate id returns the original", code == http.StatusOK && again.Duplicate && again.ID == dupID,
		fmt.Sprintf("status %d, %+v", code, again)})

	var items []string
	var payloads [][]byte
	for i := range 3 {
		p := []byte(fmt.Sprintf(`{"case":"batch","i":%d}`, i))
		payloads = append(payloads, p)
		items = append(items, fmt.Sprintf(`{"type":"echo","payload_base64":%q,"retention_ms":600000}`, b64(p)))
	}
	var batch struct {
		Tasks []struct {
			Task *struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"tasks"`
	}
	if code := d.call(ctx, t, "POST", d.plain+"/v1/queues/"+e.Queue+"/tasks/batch", `{"tasks":[`+strings.Join(items, ",")+`]}`, &batch); code != http.StatusOK || len(batch.Tasks) != 3 {
		t.Fatalf("batch: %d, %+v", code, batch)
	}
	for i, it := range batch.Tasks {
		if it.Task == nil {
			t.Fatalf("batch item %d refused", i)
		}
		add(fmt.Sprintf("batch-%d", i), it.Task.ID, payloads[i])
	}
	return rep
}

func (d *httpDriver) results(ctx context.Context, t *testing.T, e env, ids []string) map[string]readBack {
	out := map[string]readBack{}
	for _, id := range ids {
		var info struct {
			State        string          `json:"state"`
			Result       json.RawMessage `json:"result"`
			ResultBase64 []byte          `json:"result_base64"`
		}
		// the key ring's server opens every task, sealed or not
		if code := d.call(ctx, t, "GET", d.sealed+"/v1/queues/"+e.Queue+"/tasks/"+id, "", &info); code != http.StatusOK {
			t.Fatalf("GET task %s: %d", id, code)
		}
		res := info.ResultBase64
		if len(info.Result) > 0 {
			res = info.Result
		}
		out[id] = readBack{State: info.State, Result: res}
	}
	return out
}

// call sends body ("" for none) with the token and decodes the answer into
// out; it returns the status.
func (d *httpDriver) call(ctx context.Context, t *testing.T, method, url, body string, out any, header ...string) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+httpToken)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
		t.Fatalf("%s %s: %d, body %q: %v", method, url, res.StatusCode, b, err)
	}
	return res.StatusCode
}

func b64(b []byte) string {
	out, _ := json.Marshal(b)
	return strings.Trim(string(out), `"`)
}
