package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// demoCommand runs a producer and workers together and shows tasks flow.
type demoCommand struct{}

func (*demoCommand) name() string { return "demo" }
func (*demoCommand) summary() string {
	return "enqueue tasks and run them with in-process workers, showing progress (Redis: --redis, else a private redis-server)"
}

// resize is the demo's task payload.
type resize struct {
	Image string
	Width int
}

type demoFlags struct {
	redisURL    string
	tasks       int
	workers     int
	concurrency int
	work        time.Duration
	keep        bool
	dashboard   string
	allowed     listFlag
	exit        bool
}

func (c *demoCommand) run(ctx context.Context, m *Main, args []string) error {
	var f demoFlags
	fs := m.flagSet(c)
	fs.StringVar(&f.redisURL, "redis", "", redisFlagHelp)
	fs.IntVar(&f.tasks, "tasks", 3000, "tasks to enqueue")
	fs.IntVar(&f.workers, "workers", 2, "worker servers to run (each with its own worker ID)")
	fs.IntVar(&f.concurrency, "concurrency", 16, "handlers per worker server")
	fs.DurationVar(&f.work, "work", 2*time.Millisecond, "time each task pretends to work")
	fs.BoolVar(&f.keep, "keep", false, "keep the demo's keys in Redis at the end")
	fs.StringVar(&f.dashboard, "dashboard", "127.0.0.1:0", "serve the dashboard on this address (\"\" = none)")
	fs.Var(&f.allowed, "allowed-host", "a host name the dashboard answers besides loopback ones and the --dashboard host; repeatable, \"*\" = any")
	fs.BoolVar(&f.exit, "exit", false, "exit once the tasks finish, for scripts (default: the workers and dashboard stay up until Ctrl-C)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.tasks < 1 || f.workers < 1 || f.concurrency < 1 {
		return fmt.Errorf("%w: -tasks, -workers and -concurrency must be at least 1", errUsage)
	}
	rdb, closeRedis, err := m.connect(ctx, f.redisURL, true, m.Stdout)
	if err != nil {
		return err
	}
	defer closeRedis()
	d := &demo{m: m, f: f, rdb: rdb, url: m.effectiveURL(f.redisURL, rdb), cfg: queue.Config{Prefix: "shardq-demo-" + wire.Nonce()}}
	if !f.keep {
		defer d.cleanup()
	}
	return d.run(ctx)
}

type demo struct {
	m         *Main
	f         demoFlags
	rdb       redis.UniversalClient
	url       string // the Redis URL, password hidden
	cfg       queue.Config
	processed atomic.Int64
	failed    atomic.Int64
}

func (d *demo) run(ctx context.Context) error {
	client, err := queue.NewClient(d.rdb, d.cfg)
	if err != nil {
		return err
	}
	insp, err := queue.NewInspector(d.rdb, d.cfg)
	if err != nil {
		return err
	}
	servers, err := d.startWorkers(ctx)
	if err != nil {
		return err
	}
	defer d.stopWorkers(servers)

	if d.f.dashboard != "" {
		stop, err := d.serveDashboard(insp)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Fprintf(d.m.Stdout, "key prefix %s (keys are deleted on exit unless --keep)\n", d.cfg.Prefix)
	start := time.Now()
	if err := d.enqueue(ctx, client); err != nil {
		return err
	}
	fmt.Fprintf(d.m.Stdout, "enqueued %d tasks in %v; %d workers x %d handlers running them\n",
		d.f.tasks, time.Since(start).Round(time.Millisecond), d.f.workers, d.f.concurrency)
	if err := d.watch(ctx, insp, start); err != nil {
		return err
	}
	if d.f.exit || ctx.Err() != nil {
		return nil
	}
	// The dashboard and workers stay up, so the URL printed above keeps
	// answering and the queues can be inspected; Ctrl-C ends it all.
	fmt.Fprintf(d.m.Stdout, "\nthe demo stays up: workers and dashboard keep running until Ctrl-C (--exit to leave when done)\n")
	fmt.Fprintf(d.m.Stdout, "inspect its queues from another terminal:\n  %s stats --redis %s --prefix %s\n", d.m.self(), d.url, d.cfg.Prefix)
	<-ctx.Done()
	fmt.Fprintln(d.m.Stdout, "stopping: workers, dashboard, then the demo's keys")
	return nil
}

// serveDashboard serves the dashboard over the demo's queues and returns
// a function that stops it.
func (d *demo) serveDashboard(insp *queue.Inspector) (func(), error) {
	// the demo's dashboard is for whoever runs it, on loopback by default
	dash, err := dashboard.New(insp, dashboard.Options{Title: "shardq demo", Unauthenticated: true,
		AllowedHosts: allowedHosts(d.f.dashboard, d.f.allowed, true)})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	ln, err := net.Listen("tcp", d.f.dashboard)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w", d.f.dashboard, err)
	}
	srv := &http.Server{Handler: dash, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(d.m.Stdout, "dashboard on http://%s/\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// enqueue sends the tasks in batches: most run at once, every 25th is
// scheduled a second or two ahead, every 10th fails once and retries,
// every 200th fails for good and goes to dead. Succeeded tasks are kept an
// hour.
func (d *demo) enqueue(ctx context.Context, client *queue.Client) error {
	const batch = 500
	for i := 0; i < d.f.tasks; i += batch {
		tasks := make([]*queue.Task, 0, batch)
		for j := i; j < min(i+batch, d.f.tasks); j++ {
			// Kept an hour once succeeded, so the dashboard's succeeded tab shows
			// what the progress line counts (without Retention a finished
			// task leaves Redis at once).
			opts := []queue.Option{queue.Retention(time.Hour)}
			if j%25 == 24 {
				opts = append(opts, queue.ProcessIn(time.Second+time.Duration(j%1000)*time.Millisecond))
			}
			t, err := queue.NewTask("image:resize", resize{Image: fmt.Sprintf("photo-%05d.jpg", j), Width: 100 + j%7*100}, opts...)
			if err != nil {
				return err
			}
			tasks = append(tasks, t)
		}
		if _, err := client.EnqueueMany(ctx, tasks); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	return nil
}

func (d *demo) handler() worker.Handler {
	mux := worker.NewMux()
	mux.Handle("image:resize", worker.Typed(func(ctx context.Context, t *worker.Task, r resize) error {
		if d.f.work > 0 {
			select {
			case <-time.After(d.f.work):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var n int
		_, _ = fmt.Sscanf(r.Image, "photo-%05d.jpg", &n)
		switch {
		case n%200 == 199:
			d.failed.Add(1)
			return worker.SkipRetry(fmt.Errorf("%s: corrupt image", r.Image))
		case n%10 == 9 && t.Attempt == 1:
			d.failed.Add(1)
			return worker.RetryIn(300*time.Millisecond, fmt.Errorf("%s: storage busy", r.Image))
		}
		d.processed.Add(1)
		return nil
	}))
	return mux
}

func (d *demo) startWorkers(ctx context.Context) ([]*worker.Server, error) {
	var servers []*worker.Server
	for i := range d.f.workers {
		cfg := worker.Config{Config: d.cfg, Concurrency: d.f.concurrency, ShutdownTimeout: 5 * time.Second}
		cfg.Logger = slog.New(slog.NewTextHandler(d.m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		cfg.WorkerID = fmt.Sprintf("demo-%d-%s", i+1, wire.Nonce())
		s, err := worker.NewServer(d.rdb, cfg, d.handler())
		if err != nil {
			return nil, err
		}
		if err := s.Start(ctx); err != nil {
			d.stopWorkers(servers)
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

func (d *demo) stopWorkers(servers []*worker.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
}

// watch prints progress twice a second until every task succeeded or is
// dead.
func (d *demo) watch(ctx context.Context, insp *queue.Inspector, start time.Time) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(d.m.Stdout, "interrupted: shutting down the workers gracefully")
			return nil
		case now := <-tick.C:
			qi, err := insp.QueueInfo(ctx, queue.DefaultQueue)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					continue
				}
				return err
			}
			succeeded := d.processed.Load()
			rate := float64(succeeded-last) / now.Sub(lastAt).Seconds()
			last, lastAt = succeeded, now
			d.progress(d.m.Stdout, qi, succeeded, rate)
			if succeeded+qi.Dead >= int64(d.f.tasks) && qi.Pending+qi.Active+qi.Scheduled+qi.Retry == 0 {
				fmt.Fprintf(d.m.Stdout, "all %d tasks finished in %v: %d succeeded, %d dead, %d failed attempts retried\n",
					d.f.tasks, time.Since(start).Round(time.Millisecond), succeeded, qi.Dead, d.failed.Load()-qi.Dead)
				return nil
			}
		}
	}
}

func (d *demo) progress(w io.Writer, qi *queue.QueueInfo, succeeded int64, rate float64) {
	fmt.Fprintf(w, "pending %6d | active %3d | scheduled %4d | retry %4d | succeeded %6d | dead %3d | %7.0f tasks/s\n",
		qi.Pending, qi.Active, qi.Scheduled, qi.Retry, succeeded, qi.Dead, rate)
}

// cleanup deletes the demo's keys (they all start with its prefix).
func (d *demo) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pattern := range []string{"{" + d.cfg.Prefix + ":*", d.cfg.Prefix + ":*"} {
		iter := d.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
		}
		for len(batch) > 0 {
			n := min(len(batch), 500)
			_ = d.rdb.Del(ctx, batch[:n]...).Err()
			batch = batch[n:]
		}
	}
}
