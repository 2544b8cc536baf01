package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestMetricsEndpoints scrapes /metrics from a running shardq worker
// (--metrics-addr) and shardq dashboard over a Redis with known task
// counts: the series and values match, the worker adds its handlers'
// metrics, and the dashboard's endpoint honours its authentication unless
// --public-metrics says otherwise.
func TestMetricsEndpoints(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ctx := context.Background()
	client, err := queue.NewClient(srv.Client(t), queue.Config{})
	must(t, err)
	for range 3 {
		_, err := client.Enqueue(ctx, queue.NewRawTask("cat", []byte("x")), queue.In("jobs"), queue.Retention(time.Hour))
		must(t, err)
	}
	for range 7 {
		_, err := client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In("backlog"))
		must(t, err)
	}
	addrOf := func(p *proc, prefix string) string {
		t.Helper()
		re := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(http://[0-9.:]+)`)
		var url string
		waitUntil(t, 30*time.Second, prefix, func() bool {
			m := re.FindStringSubmatch(p.stdout.String())
			if m != nil {
				url = m[1]
			}
			return m != nil
		})
		return url
	}
	get := func(url string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		must(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	w := startShardq(t, env, "worker", "--queues", "jobs", "--handler", "cat=exec:cat", "--metrics-addr", "127.0.0.1:0")
	wurl := addrOf(w, "metrics on ")
	insp := inspector(t, srv)
	waitUntil(t, 30*time.Second, "3 tasks succeeded", func() bool {
		qi, err := insp.QueueInfo(ctx, "jobs")
		return err == nil && qi.Succeeded == 3
	})
	code, body := get(wurl + "/metrics")
	for _, want := range []string{
		`shardq_queue_tasks{queue="backlog",state="pending"} 7`,
		`shardq_queue_tasks{queue="jobs",state="succeeded"} 3`,
		`shardq_tasks_processed_total{queue="jobs"} 3`,
		`shardq_workers{queue="jobs"} 1`,
		`shardq_workers{queue="backlog"} 0`,
		`shardq_handler_runs_total{queue="jobs",state="succeeded",type="cat"} 3`,
		`shardq_handler_duration_seconds_count{queue="jobs",type="cat"} 3`,
		`shardq_up 1`,
		`go_goroutines`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("worker /metrics (%d) lacks %q", code, want)
		}
	}

	// a task of backlog in the in-flight list of a worker that is gone,
	// for the dashboard's background audit to find (shardq doctor)
	k := keys.For(config.DefaultPrefix, "backlog", 0)
	first, _ := srv.Client(t).Get(ctx, k.First()).Int()
	must(t, srv.Client(t).LMove(ctx, k.ShardPrefix()+strconv.Itoa(first), k.Inflight("ghost"), "LEFT", "RIGHT").Err())

	d := startShardq(t, env, "dashboard", "--addr", "127.0.0.1:0", "--token", "s3cret", "--doctor-every", "100ms")
	durl := addrOf(d, "dashboard on ")
	waitUntil(t, 30*time.Second, "the dashboard's audit", func() bool {
		_, body := get(durl+"/metrics", "Authorization", "Bearer s3cret")
		return strings.Contains(body, "shardq_doctor_up 1")
	})
	_, body = get(durl+"/metrics", "Authorization", "Bearer s3cret")
	for _, want := range []string{
		`shardq_doctor_violations{check="orphaned-inflight"} 1`,
		`shardq_doctor_violations{check="stuck-leases"} 0`,
		`shardq_doctor_last_run_timestamp_seconds`,
		`shardq_doctor_run_seconds`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard /metrics lacks %q:\n%s", want, grepLines(body, "shardq_doctor"))
		}
	}
	if code, _ := get(durl + "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("dashboard /metrics without the token: %d, want 401", code)
	}
	code, body = get(durl+"/metrics", "Authorization", "Bearer s3cret")
	// 6: the seventh waits in the gone worker's in-flight list
	if code != 200 || !strings.Contains(body, `shardq_queue_tasks{queue="backlog",state="pending"} 6`) {
		t.Errorf("dashboard /metrics with the token: %d\n%s", code, grepLines(body, "shardq_queue_tasks"))
	}
	pub := startShardq(t, env, "dashboard", "--addr", "127.0.0.1:0", "--token", "s3cret", "--public-metrics")
	purl := addrOf(pub, "dashboard on ")
	if code, _ := get(purl + "/metrics"); code != 200 {
		t.Errorf("--public-metrics: /metrics without the token: %d, want 200", code)
	}
	if code, _ := get(purl + "/api/queues"); code != http.StatusUnauthorized {
		t.Errorf("--public-metrics opened the API too: %d", code)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
