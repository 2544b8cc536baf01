package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// dashboardCommand serves the web dashboard.
type dashboardCommand struct{}

func (*dashboardCommand) name() string { return "dashboard" }
func (*dashboardCommand) summary() string {
	return "serve the web dashboard (queues, tasks, workers, cron, limits) and its JSON API"
}

func (c *dashboardCommand) run(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet(c)
	redisURL := fs.String("redis", "", redisFlagHelp)
	prefix := fs.String("prefix", queue.DefaultPrefix, "key prefix of the queues")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	readOnly := fs.Bool("read-only", false, "hide and refuse every action")
	basic := fs.String("basic-auth", "", "require HTTP basic auth: user:password (default $SHARDQ_DASHBOARD_BASIC_AUTH)")
	token := fs.String("token", "", "require this bearer token (default $SHARDQ_DASHBOARD_TOKEN)")
	publicMetrics := fs.Bool("public-metrics", false, "serve /metrics (Prometheus) without the dashboard's authentication")
	var store storeFlags
	store.add(fs, false, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	opts := dashboard.Options{ReadOnly: *readOnly, BearerToken: cmpOr(*token, m.Getenv("SHARDQ_DASHBOARD_TOKEN"))}
	if b := cmpOr(*basic, m.Getenv("SHARDQ_DASHBOARD_BASIC_AUTH")); b != "" {
		user, pass, ok := strings.Cut(b, ":")
		if !ok || user == "" || pass == "" {
			return fmt.Errorf("%w: --basic-auth wants user:password", errUsage)
		}
		opts.BasicAuth = &dashboard.BasicAuth{User: user, Password: pass}
	}
	rdb, closeRedis, err := m.connect(ctx, *redisURL, false, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	cfg := queue.Config{Prefix: *prefix}
	if err := store.apply(m, &cfg); err != nil {
		return err
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
	opts.Metrics = promhttp.HandlerFor(metricsRegistry(insp), promhttp.HandlerOpts{})
	opts.MetricsPublic = *publicMetrics
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: dashboard.New(insp, opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(m.Stdout, "dashboard on http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
