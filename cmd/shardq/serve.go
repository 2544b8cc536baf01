package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/httpapi"
	"github.com/shardq/shardq/queue"
)

// serveCommand serves the HTTP producer API (internal/httpapi).
type serveCommand struct{}

// serveTokenSource is where the API's bearer token comes from.
var serveTokenSource = secretSource{flag: "token", fileFlag: "token-file", env: "SHARDQ_SERVE_TOKEN"}

func (*serveCommand) name() string { return "serve" }
func (*serveCommand) summary() string {
	return "serve the HTTP producer API: enqueue and read tasks from any language"
}

func (c *serveCommand) run(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet(c)
	redisURL := fs.String("redis", "", redisFlagHelp)
	prefix := fs.String("prefix", config.DefaultPrefix, "key prefix of the queues")
	addr := fs.String("addr", "127.0.0.1:8090", "address to listen on")
	token := fs.String("token", "", "the bearer token requests must carry; other users see it in ps: prefer --token-file or $SHARDQ_SERVE_TOKEN")
	tokenFile := fs.String("token-file", "", "read the bearer token from this file")
	maxBody := fs.Int64("max-body", 8<<20, "the largest request body, in bytes")
	maxBatch := fs.Int("max-batch", 1000, "the most tasks of one batch request")
	maxInFlight := fs.Int("max-in-flight", 256, "the most requests served at once; more are answered 503")
	var store storeFlags
	store.add(fs, true, true)
	describe(fs, c, "[flags]", serveDetails, serveExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	tok, from, err := serveTokenSource.read(m, visited(fs), *token, *tokenFile)
	switch {
	case err != nil:
		return err
	case tok == "":
		return usageErr("no token: give --token-file, $%s or --token; the API serves no request without one", serveTokenSource.env)
	case from == "--token":
		fmt.Fprintf(m.Stderr, "shardq serve: warning: --token puts the secret where other users see it (ps, /proc); use --token-file or $%s\n", serveTokenSource.env)
	}
	switch {
	case *maxBody < 1:
		return usageErr("--max-body %d, want >= 1", *maxBody)
	case *maxBatch < 1 || *maxBatch > 10_000:
		return usageErr("--max-batch %d, want 1 to 10000", *maxBatch)
	case *maxInFlight < 1:
		return usageErr("--max-in-flight %d, want >= 1", *maxInFlight)
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
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := warnPrefix(ctx, m, rdb, insp, *prefix, "tasks enqueued here wait until a worker serves this prefix"); err != nil {
		return err
	}
	h, err := httpapi.New(client, insp, httpapi.Options{Token: tok, MaxBodyBytes: *maxBody, MaxBatch: *maxBatch,
		MaxInFlight: *maxInFlight, Logger: slog.New(slog.NewTextHandler(m.Stderr, nil))})
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(m.Stdout, "serving the HTTP API on http://%s/v1/\n", ln.Addr())
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

const serveDetails = `
Serves the HTTP producer API (docs/http.md), so that a service in any
language enqueues tasks with an HTTP client, and reads them back:

  POST /v1/queues/{queue}/tasks        one task; Idempotency-Key is its ID
  POST /v1/queues/{queue}/tasks/batch  up to --max-batch tasks, one round trip
  GET  /v1/queues/{queue}/tasks/{id}   a task, with its result while kept
  GET  /v1/openapi.json                the OpenAPI 3 document

Every request carries the bearer token (Authorization: Bearer <token>),
from --token-file, $SHARDQ_SERVE_TOKEN or --token; without one the command
refuses to start. Payloads sent as JSON reach handlers as raw JSON
(worker.Typed and Task.Decode read them). --key-file and --compression
apply to what it enqueues, as for shardq enqueue.`

const serveExitCodes = `Exit codes:
  0  stopped by SIGINT or SIGTERM
  1  Redis unreachable, or the address taken
  2  bad flags, or no token`
