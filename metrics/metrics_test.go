package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/shardq/shardq/internal/inspect"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/metrics"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// gather returns every sample of reg as "name{label=value,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestQueueCollector: a scrape reports what the queues hold, with known
// counts made by a real worker.
func TestQueueCollector(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, cfg)
	must(t, err)
	enq := func(n int, typ string, opts ...queue.Option) {
		for range n {
			_, err := client.Enqueue(ctx, queue.NewRawTask(typ, nil), opts...)
			must(t, err)
		}
	}
	release := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { return nil })
	mux.HandleFunc("die", func(context.Context, *worker.Task) error { return worker.SkipRetry(errors.New("no")) })
	mux.HandleFunc("block", func(ctx context.Context, _ *worker.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	w, err := worker.NewServer(rdb, worker.Config{Config: cfg, Queues: map[string]int{"work": 1}, Concurrency: 4,
		Heartbeat: 100 * time.Millisecond}, mux)
	must(t, err)
	must(t, w.Start(ctx))
	t.Cleanup(func() {
		close(release)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	})
	enq(5, "ok", queue.In("work"), queue.Retention(time.Hour))
	enq(2, "die", queue.In("work"))
	enq(1, "block", queue.In("work"))
	enq(3, "ok", queue.In("work"), queue.ProcessIn(time.Hour))
	enq(4, "ok", queue.In("idle")) // no worker serves it
	must(t, insp.Pause(ctx, "idle"))
	deadline := time.Now().Add(15 * time.Second)
	for {
		qi, err := insp.QueueInfo(ctx, "work")
		must(t, err)
		work, err := inspect.LiveWork(ctx, insp)
		must(t, err)
		// and a heartbeat since: the worker's status says the one runs
		if qi.Succeeded == 5 && qi.Dead == 2 && qi.Active == 1 && work["work"].Running == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not settle: %+v", qi)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // some latency for "idle"

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}))
	got := gather(t, reg)
	want := map[string]float64{
		`shardq_queue_tasks{queue=work,state=succeeded}`: 5,
		`shardq_queue_tasks{queue=work,state=dead}`:      2,
		`shardq_queue_tasks{queue=work,state=active}`:    1,
		`shardq_queue_tasks{queue=work,state=scheduled}`: 3,
		`shardq_queue_tasks{queue=work,state=pending}`:   0,
		`shardq_queue_tasks{queue=idle,state=pending}`:   4,
		`shardq_queue_paused{queue=idle}`:                1,
		`shardq_queue_paused{queue=work}`:                0,
		`shardq_tasks_processed_total{queue=work}`:       7,
		`shardq_tasks_failed_total{queue=work}`:          2,
		`shardq_workers{queue=work}`:                     1,
		`shardq_workers{queue=idle}`:                     0,
		`shardq_queue_running{queue=work}`:               1,
		`shardq_queue_held_ahead{queue=work}`:            0,
		`shardq_queue_running{queue=idle}`:               0,
		`shardq_limit_holders{queue=work}`:               1,
		`shardq_limit_waiters{queue=work}`:               0,
		`shardq_queue_desired_workers{queue=work}`:       1,
		`shardq_up{}`:                  1,
		`shardq_scrape_errors_total{}`: 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if l := got[`shardq_queue_latency_seconds{queue=idle}`]; l < 0.02 || l > 60 {
		t.Errorf("latency of idle = %v, want the age of its oldest pending task", l)
	}

	// Redis gone: shardq_up 0 and the failure counted, no panic
	srv.Kill(t)
	down := prometheus.NewRegistry()
	c := metrics.NewQueueCollector(insp, metrics.QueueOptions{Timeout: 2 * time.Second})
	down.MustRegister(c)
	got = gather(t, down)
	if got[`shardq_up{}`] != 0 || got[`shardq_scrape_errors_total{}`] != 1 {
		t.Fatalf("with Redis down: up %v, errors %v", got[`shardq_up{}`], got[`shardq_scrape_errors_total{}`])
	}
}

// TestQueueCollectorAtScale: a scrape over 1,000,000 pending tasks costs
// a bounded number of round trips, counted with a go-redis hook.
func TestQueueCollectorAtScale(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// a client that never resends: on a loaded machine a 25,000-task call
	// may outlast the default read timeout, and a resent one enqueues twice
	rdb := queue.NewRedisClientFromOptions(&redis.UniversalOptions{Addrs: []string{srv.Addr}, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t), FeedSize: 1000}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	const total, batch = 1_000_000, 25_000
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks := make([]*queue.Task, batch)
			for j := range tasks {
				tasks[j] = queue.NewRawTask("t", []byte("p"))
			}
			for n := p * batch; n < total; n += 4 * batch {
				if _, err := client.EnqueueMany(ctx, tasks, queue.In("big")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	counted := srv.Client(t)
	hook := &roundTrips{}
	counted.AddHook(hook)
	insp, err := queue.NewInspector(counted, cfg)
	must(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}))
	gather(t, reg) // loads the scripts: a cold cache costs one EVAL each
	hook.n.Store(0)
	got := gather(t, reg)
	if got[`shardq_queue_tasks{queue=big,state=pending}`] != total {
		t.Fatalf("pending = %v, want %d", got[`shardq_queue_tasks{queue=big,state=pending}`], total)
	}
	// registry, QueueInfo (registry + counts), workers, Scaling (registry + pipeline)
	if n := hook.n.Load(); n > 6 {
		t.Fatalf("a scrape over %d pending tasks took %d round trips, want <= 6", total, n)
	}
}

// TestGroupMetrics: a scrape reports how many groups have tasks waiting,
// and the backlogs of the top groups only, however many groups wait:
// 10,000 groups cost the scrape the same round trips as 10.
func TestGroupMetrics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	var tasks []*queue.Task
	for k := range 10_000 {
		n := 1
		if k < 3 {
			n = 50 - k // group-0 50 tasks, group-1 49, group-2 48
		}
		for range n {
			tasks = append(tasks, queue.NewRawTask("t", nil, queue.Group(fmt.Sprint("group-", k))))
		}
	}
	_, err = client.EnqueueMany(ctx, tasks, queue.In("fair"))
	must(t, err)
	counted := srv.Client(t)
	hook := &roundTrips{}
	counted.AddHook(hook)
	insp, err := queue.NewInspector(counted, cfg)
	must(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{TopGroups: 3}))
	gather(t, reg) // loads the scripts
	hook.n.Store(0)
	got := gather(t, reg)
	if n := hook.n.Load(); n > 8 {
		t.Errorf("a scrape over 10,000 groups took %d round trips, want <= 8", n)
	}
	if got[`shardq_queue_groups{queue=fair}`] != 10_000 {
		t.Errorf("shardq_queue_groups = %v, want 10000", got[`shardq_queue_groups{queue=fair}`])
	}
	series := 0
	for k := range got {
		if strings.HasPrefix(k, "shardq_group_backlog{") {
			series++
		}
	}
	want := map[string]float64{"group-0": 50, "group-1": 49, "group-2": 48}
	for group, v := range want {
		if g := got[`shardq_group_backlog{group=`+group+`,queue=fair}`]; g != v {
			t.Errorf("shardq_group_backlog of %s = %v, want %v", group, g, v)
		}
	}
	if series != 3 {
		t.Errorf("%d series of shardq_group_backlog, want the top 3", series)
	}

	// the zero TopGroups is the default, 10
	byDefault := prometheus.NewRegistry()
	byDefault.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}))
	series = 0
	for k := range gather(t, byDefault) {
		if strings.HasPrefix(k, "shardq_group_backlog{") {
			series++
		}
	}
	if series != 10 {
		t.Errorf("%d series of shardq_group_backlog with QueueOptions{}, want the top 10", series)
	}

	none := prometheus.NewRegistry()
	none.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{TopGroups: -1}))
	for k := range gather(t, none) {
		if strings.HasPrefix(k, "shardq_group_backlog{") {
			t.Fatalf("TopGroups -1 still reports %s", k)
		}
	}
}

type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestWorkerMetrics: the observer counts a worker's handler runs by
// the state they left the task in, their durations, panics, and in-flight handlers.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	reg := prometheus.NewRegistry()
	obs := metrics.NewWorkerMetrics(reg)
	var done atomic.Int64
	mux := worker.NewMux()
	mux.HandleFunc("ok", func(context.Context, *worker.Task) error { done.Add(1); return nil })
	mux.HandleFunc("flaky", func(_ context.Context, t *worker.Task) error {
		done.Add(1)
		if t.Attempt == 1 {
			return errors.New("once")
		}
		return nil
	})
	mux.HandleFunc("panic", func(context.Context, *worker.Task) error { done.Add(1); panic("boom") })
	var snoozed atomic.Bool
	mux.HandleFunc("snooze", func(context.Context, *worker.Task) error {
		done.Add(1)
		if !snoozed.Swap(true) {
			return worker.Snooze(10 * time.Millisecond)
		}
		return nil
	})
	mux.HandleFunc("retry", func(_ context.Context, t *worker.Task) error {
		done.Add(1)
		if t.Attempt == 1 {
			return errors.New("once")
		}
		return nil
	})
	w, err := worker.NewServer(rdb, worker.Config{Config: cfg, Observer: obs, ForwardInterval: 20 * time.Millisecond,
		RetryDelay: func(int, error, *worker.Task) time.Duration { return 0 }}, mux)
	must(t, err)
	must(t, w.Start(ctx))
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	}()
	for _, typ := range []string{"ok", "ok", "flaky", "panic", "snooze"} {
		_, err := client.Enqueue(ctx, queue.NewRawTask(typ, nil), queue.MaxRetry(0))
		must(t, err)
	}
	_, err = client.Enqueue(ctx, queue.NewRawTask("retry", nil), queue.MaxRetry(1))
	must(t, err)
	for end := time.Now().Add(15 * time.Second); done.Load() < 8; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d handler runs", done.Load())
		}
	}
	time.Sleep(100 * time.Millisecond) // the last HandlerFinished
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`shardq_handler_runs_total{queue=default,state=succeeded,type=ok}`: 2,
		`shardq_handler_runs_total{queue=default,state=dead,type=flaky}`:   1, // MaxRetry(0): dead
		`shardq_handler_runs_total{queue=default,state=dead,type=panic}`:   1,
		// a Snooze is no failure: its own state, then the run that succeeds
		`shardq_handler_runs_total{queue=default,state=scheduled,type=snooze}`: 1,
		`shardq_handler_runs_total{queue=default,state=succeeded,type=snooze}`: 1,
		`shardq_handler_runs_total{queue=default,state=retry,type=retry}`:      1,
		`shardq_handler_runs_total{queue=default,state=succeeded,type=retry}`:  1,
		`shardq_handler_panics_total{queue=default,type=panic}`:                1,
		`shardq_handler_duration_seconds{queue=default,type=ok}`:               2,
		`shardq_tasks_in_flight{queue=default}`:                                0,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// TestDocsReferenceRealMetrics: every shardq_* series the Grafana
// dashboard and the alert rules in docs/ name is one this package
// exports, and every label a selector of it matches on is one it has.
func TestDocsReferenceRealMetrics(t *testing.T) {
	t.Parallel()
	labels := map[string]map[string]bool{} // metric -> its labels
	fq := regexp.MustCompile(`fqName: "([a-z_]+)".*variableLabels: \{([a-z_,]*)\}`)
	describe := func(d *prometheus.Desc) {
		m := fq.FindStringSubmatch(d.String())
		labels[m[1]] = map[string]bool{"le": true} // histograms' buckets
		for _, l := range strings.Split(m[2], ",") {
			labels[m[1]][l] = true
		}
	}
	reg := prometheus.NewRegistry()
	metrics.NewWorkerMetrics(reg)
	ch := make(chan *prometheus.Desc, 64)
	metrics.NewQueueCollector(nil, metrics.QueueOptions{}).Describe(ch)
	close(ch)
	for d := range ch {
		describe(d)
	}
	// the worker's vectors appear once they have a child: describe them instead
	wch := make(chan *prometheus.Desc, 64)
	go func() { reg.Describe(wch); close(wch) }()
	for d := range wch {
		describe(d)
	}
	if len(labels) < 14 || !labels["shardq_handler_runs_total"]["state"] {
		t.Fatalf("only %d metrics, or no state label: %v", len(labels), labels)
	}
	series := regexp.MustCompile(`(shardq_[a-z_]+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	check := func(file, text string) int {
		n := 0
		for _, m := range series.FindAllStringSubmatch(text, -1) {
			s := m[1]
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "_bucket"), "_sum"), "_count")
			has, ok := labels[s]
			if !ok {
				has, ok = labels[base]
			}
			if !ok {
				t.Errorf("%s names %s, which package metrics does not export", file, s)
				continue
			}
			for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
				if !has[l[1]] {
					t.Errorf("%s matches %s on the label %q, which it does not have", file, s, l[1])
				}
			}
			n++
		}
		return n
	}
	raw, err := os.ReadFile("../docs/grafana/shardq.json")
	must(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	must(t, json.Unmarshal(raw, &dash))
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs += check("docs/grafana/shardq.json ("+p.Title+")", tg.Expr)
		}
	}
	rules, err := os.ReadFile("../docs/prometheus/alerts.yml")
	must(t, err)
	var alerts []string
	for _, line := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			alerts = append(alerts, e)
			check("docs/prometheus/alerts.yml", e)
		}
	}
	if exprs < 10 || len(alerts) < 4 {
		t.Fatalf("%d dashboard series, %d alert expressions: the files did not parse as expected", exprs, len(alerts))
	}
	for _, name := range []string{"ShardqBacklogGrowing", "ShardqLatencyHigh", "ShardqNoWorkers", "ShardqDeadTasksRising"} {
		if !strings.Contains(string(rules), "alert: "+name) {
			t.Errorf("alerts.yml lacks %s", name)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueueCollectorMaxQueues: anyone who can enqueue can create queues,
// and every queue costs a scrape its series. The collector exports the
// first 1,000 queues by name unless told otherwise, counts the rest in
// shardq_queues_dropped, and its series stay within the bound its godoc
// states: 18 per queue, plus the top groups', plus 3.
func TestQueueCollectorMaxQueues(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	client, err := queue.NewClient(rdb, cfg)
	must(t, err)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for j := w; j < 1005; j += 8 {
				if _, err := client.Enqueue(ctx, queue.NewRawTask("t", nil), queue.In(fmt.Sprintf("q%04d", j))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	insp, err := queue.NewInspector(rdb, cfg)
	must(t, err)
	for name, c := range map[string]struct {
		opts           metrics.QueueOptions
		exported, perQ int
		first, last    string
		dropped        float64
	}{
		"default":   {metrics.QueueOptions{NoScaling: true}, 1000, 17, "q0000", "q0999", 5},
		"10":        {metrics.QueueOptions{MaxQueues: 10}, 10, 18, "q0000", "q0009", 995},
		"two pages": {metrics.QueueOptions{MaxQueues: 1002, NoScaling: true}, 1002, 17, "q0000", "q1001", 3},
		"unbounded": {metrics.QueueOptions{MaxQueues: -1, NoScaling: true}, 1005, 17, "q0000", "q1004", 0},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewQueueCollector(insp, c.opts))
		got := gather(t, reg)
		queues := map[string]bool{}
		for k := range got {
			if m := regexp.MustCompile(`queue=([^,}]+)`).FindStringSubmatch(k); m != nil {
				queues[m[1]] = true
			}
		}
		if len(queues) != c.exported || !queues[c.first] || !queues[c.last] || got["shardq_queues_dropped{}"] != c.dropped || got["shardq_up{}"] != 1 {
			t.Errorf("%s: %d queues exported (%s..%s there: %v %v), %v dropped; want %d, %v dropped",
				name, len(queues), c.first, c.last, queues[c.first], queues[c.last], got["shardq_queues_dropped{}"], c.exported, c.dropped)
		}
		// no groups wait, so no shardq_group_backlog: exactly the per-queue series and 3
		if len(got) != c.exported*c.perQ+3 {
			t.Errorf("%s: %d series, want %d", name, len(got), c.exported*c.perQ+3)
		}
	}
}
