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
	"github.com/shardq/shardq/internal/config"
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
	prefix := fs.String("prefix", config.DefaultPrefix, "key prefix of the queues")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	readOnly := fs.Bool("read-only", false, "hide and refuse every action")
	basic := fs.String("basic-auth", "", "require HTTP basic auth: user:password; other users see it in ps: prefer --basic-auth-file or $SHARDQ_DASHBOARD_BASIC_AUTH")
	basicFile := fs.String("basic-auth-file", "", "require HTTP basic auth: read user:password from this file")
	token := fs.String("token", "", "require this bearer token; other users see it in ps: prefer --token-file or $SHARDQ_DASHBOARD_TOKEN")
	tokenFile := fs.String("token-file", "", "require a bearer token: read it from this file")
	publicMetrics := fs.Bool("public-metrics", false, "serve /metrics (Prometheus) without the dashboard's authentication")
	doctorEvery := fs.Duration("doctor-every", 10*time.Minute, "audit the prefix read-only this often, as shardq doctor does, for /metrics' shardq_doctor_* gauges; 0: never")
	var allowed listFlag
	fs.Var(&allowed, "allowed-host", "a host name the dashboard answers besides loopback ones and the --addr host; repeatable, \"*\" = any")
	var store storeFlags
	store.add(fs, false, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	opts := dashboard.Options{ReadOnly: *readOnly}
	if err := m.dashboardSecrets(fs, &opts, *basic, *basicFile, *token, *tokenFile); err != nil {
		return err
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
	if err := warnPrefix(ctx, m, rdb, insp, *prefix, "the dashboard shows nothing until a queue starts there"); err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
	if *doctorEvery < 0 {
		return fmt.Errorf("%w: --doctor-every %v, want >= 0", errUsage, *doctorEvery)
	}
	reg := metricsRegistry(insp)
	if *doctorEvery > 0 {
		dc := newDoctorCollector()
		reg.MustRegister(dc)
		// the audits stop, and write no more to m.Stderr, before run
		// returns, whether it returns for ctx or for an error below
		auditCtx, stopAudits := context.WithCancel(ctx)
		audited := make(chan struct{})
		go func() {
			defer close(audited)
			dc.run(auditCtx, rdb, *prefix, *doctorEvery, m.Stderr)
		}()
		defer func() { stopAudits(); <-audited }()
	}
	opts.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	opts.MetricsPublic = *publicMetrics
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	opts.Unauthenticated = opts.BasicAuth == nil && opts.BearerToken == ""
	opts.AllowedHosts = allowedHosts(*addr, allowed, opts.Unauthenticated)
	dash, err := dashboard.New(insp, opts)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	srv := &http.Server{Handler: dash, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(m.Stdout, "dashboard on http://%s/\n", ln.Addr())
	if opts.Unauthenticated && !loopback(ln.Addr()) {
		fmt.Fprintf(m.Stderr, "shardq dashboard: warning: no authentication on %s: anyone who reaches it "+
			"by an allowed host name can run actions (set --basic-auth-file or --token-file)\n", ln.Addr())
	}
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

// allowedHosts are the Host names a dashboard answers besides loopback
// ones: those given, and the listen address's host when it names one
// (not 0.0.0.0 or ::). None when an authenticated dashboard was given
// none: it then answers any Host, as credentials protect it.
func allowedHosts(addr string, given []string, unauthenticated bool) []string {
	if !unauthenticated && len(given) == 0 {
		return nil
	}
	out := append([]string(nil), given...)
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			out = append(out, host)
		}
	}
	return out
}

// loopback reports whether a listener's address is a loopback one.
func loopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// dashboardSecrets sets opts' credentials from the flags, files and
// environment. A secret given on the command line works, with a warning:
// other users of the machine see it in ps.
func (m *Main) dashboardSecrets(fs *flags, opts *dashboard.Options, basic, basicFile, token, tokenFile string) error {
	set := visited(fs)
	b, from, err := basicAuthSource.read(m, set, basic, basicFile)
	if err != nil {
		return err
	}
	if b != "" {
		user, pass, ok := strings.Cut(b, ":")
		if !ok || strings.TrimSpace(user) == "" || strings.TrimSpace(pass) == "" {
			return usageErr("%s wants user:password, both non-empty", from)
		}
		opts.BasicAuth = &dashboard.BasicAuth{User: user, Password: pass}
	}
	if opts.BearerToken, _, err = tokenSource.read(m, set, token, tokenFile); err != nil {
		return err
	}
	for _, s := range []secretSource{basicAuthSource, tokenSource} {
		if set[s.flag] {
			fmt.Fprintf(m.Stderr, "shardq dashboard: warning: --%s puts the secret where other users see it (ps, /proc); "+
				"use --%s or $%s\n", s.flag, s.fileFlag, s.env)
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
