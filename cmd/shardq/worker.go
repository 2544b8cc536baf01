package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/redact"
	"github.com/shardq/shardq/metrics"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// workerCommand runs built-in handlers, so producers in any language can
// have tasks run by a command or a webhook:
//
//	shardq worker --queues email:3,default --handler 'email:send=exec:./send-mail --fast' \
//	    --handler 'notify=http:https://hooks.example.com/shardq'
//
// An exec handler runs its command with the payload on standard input and
// SHARDQ_TASK_ID, SHARDQ_TASK_TYPE, SHARDQ_ATTEMPT and SHARDQ_QUEUE in its
// environment. Exit 0 acks the task; the retry exit code (75, EX_TEMPFAIL,
// by default) retries it (after --retry-in, else the usual backoff); any
// other exit code fails the attempt (retried with backoff, dead when its
// retries are spent) with the tail of standard error as its error. A
// command still running at the task's timeout is killed, and the attempt
// fails. Standard output goes to the worker's.
//
// An http handler POSTs the payload (Content-Type application/octet-stream,
// or application/json with --json) with the headers X-Shardq-Task-Id,
// X-Shardq-Task-Type, X-Shardq-Attempt and X-Shardq-Queue. A 2xx status
// acks the task; 429 and 503 retry it (after Retry-After when given);
// other 4xx statuses send it to dead; 5xx statuses and network errors fail
// the attempt.
//
// SIGINT and SIGTERM shut the worker down gracefully: it stops fetching,
// lets running tasks finish for --shutdown-timeout, then kills what still
// runs and gives those tasks back to their queues. Exit codes: 0 after a
// graceful shutdown, 1 when Redis cannot be reached or the worker fails,
// 2 for bad flags, handler specs or config files.
type workerCommand struct{}

func (*workerCommand) name() string { return "worker" }
func (*workerCommand) summary() string {
	return "run tasks with built-in handlers: a command (exec) or a webhook (http) per task type"
}

const workerDetails = `
Handlers, one per task type, from --handler (repeatable) or --config:
  --handler 'TYPE=exec:COMMAND ARGS...'   run COMMAND (quotes work as in a shell; nothing is expanded)
  --handler 'TYPE=http:URL'               POST the task to URL

exec: the payload on stdin; SHARDQ_TASK_ID, SHARDQ_TASK_TYPE, SHARDQ_ATTEMPT and
SHARDQ_QUEUE in the environment; stdout goes to the worker's stdout.
  exit 0                  succeeded
  exit --retry-exit-code  retried (after --retry-in, else the usual backoff)
  any other exit code     failed: retried with backoff, dead when out of retries;
                          the tail of stderr is the task's error
  killed at the timeout   failed, as above

http: POST with Content-Type application/octet-stream (application/json with
--json) and the headers X-Shardq-Task-Id, -Type, -Attempt and -Queue.
  2xx                     succeeded
  429, 503                retried, after Retry-After when given
  other 4xx               dead at once
  5xx, network errors     failed: retried with backoff

--queues names queues with weights ('email:3,default'); a pattern in it
('tenant:*=1', path.Match syntax, weight after '=' or ':') runs every queue
it matches as producers create them, looking every 2s, and stops running
one deleted; each matched queue gets the pattern's weight.

--config FILE is JSON; flags given on the command line win over it (and
$SHARDQ_REDIS_URL and $REDIS_URL over its "redis"):
  {"redis": "redis://localhost:6379", "prefix": "shardq", "queues": {"email": 3, "default": 1},
   "concurrency": 20, "shutdown_timeout": "30s", "strict_priority": false,
   "handlers": {
     "resize": {"exec": ["resize-image", "--fast"], "timeout": "2m", "retry_exit_code": 75},
     "notify": {"http": "https://hooks.example.com/shardq", "json": true,
                "headers": {"Authorization": "Bearer ..."}, "retry_in": "1m"}}}

SIGINT or SIGTERM: stop fetching, let running tasks finish for
--shutdown-timeout, then kill what still runs and give those tasks back.
A second signal stops at once: running commands are killed with the
worker, and their tasks come back when their leases expire.`

const workerExitCodes = `Exit codes:
  0  stopped by SIGINT or SIGTERM, after a graceful shutdown
  1  Redis unreachable, or the worker failed
  2  bad flags, handler specs or config file`

type workerFlags struct {
	redisURL        string
	prefix          string
	queues          string
	strict          bool
	concurrency     int
	handlers        listFlag
	config          string
	shutdownTimeout time.Duration
	json            bool
	timeout         time.Duration
	retryExitCode   int
	retryIn         time.Duration
	logLevel        string
	metricsAddr     string
	store           storeFlags
}

func (c *workerCommand) run(ctx context.Context, m *Main, args []string) error {
	var f workerFlags
	fs := m.flagSet(c)
	fs.StringVar(&f.redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&f.prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`addr`/metrics (queues, and this worker's handlers)")
	fs.StringVar(&f.queues, "queues", queue.DefaultQueue, "`list` of queues to run, with weights: name[:weight],...; a pattern ('tenant:*=1') runs every queue it matches, as they appear")
	fs.BoolVar(&f.strict, "strict", false, "strict priority: always the heaviest queue with work first")
	fs.IntVar(&f.concurrency, "concurrency", 10, "tasks run at once")
	fs.Var(&f.handlers, "handler", "a handler `spec`: TYPE=exec:COMMAND ARGS... or TYPE=http:URL (repeatable)")
	fs.StringVar(&f.config, "config", "", "JSON config `file` (queues, concurrency, handlers)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long running tasks may finish after SIGINT/SIGTERM")
	fs.BoolVar(&f.json, "json", false, "hand msgpack payloads to handlers as JSON (raw payloads pass as they are)")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound each run of a handler (0: only the task's own timeout)")
	fs.IntVar(&f.retryExitCode, "retry-exit-code", 75, "exec: the exit code that asks for a retry")
	fs.DurationVar(&f.retryIn, "retry-in", 0, "wait before a requested retry without Retry-After (0: the usual backoff)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug (every task), info, warn or error")
	f.store.add(fs, true, true)
	describe(fs, c, "[flags]", workerDetails, workerExitCodes)
	if err := parse(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageErr("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: level}))
	cfg, specs, fileRedis, err := f.settings(visited(fs))
	if err != nil {
		return err
	}
	cfg.Logger = log
	if err := f.store.apply(m, &cfg.Config); err != nil {
		return err
	}
	url := cmp.Or(f.redisURL, m.Getenv("SHARDQ_REDIS_URL"), m.Getenv("REDIS_URL"), fileRedis)
	if url == "" {
		return errNoRedis // before the handlers are logged: a usage error is one line
	}
	mux, err := f.mux(m, specs, log)
	if err != nil {
		return err
	}
	rdb, closeRedis, err := m.connect(ctx, url, false, m.Stderr)
	if err != nil {
		return err
	}
	defer closeRedis()
	if f.metricsAddr != "" {
		insp, err := queue.NewInspector(rdb, cfg.Config)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		reg := metricsRegistry(insp)
		cfg.Observer = metrics.NewWorkerMetrics(reg)
		stop, err := serveMetrics(f.metricsAddr, reg, m.Stdout)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		defer stop()
	}
	if insp, err := queue.NewInspector(rdb, cfg.Config); err == nil {
		if err := warnPrefix(ctx, m, rdb, insp, cfg.Prefix, "this worker starts its first queues"); err != nil {
			return err
		}
	}
	srv, err := worker.NewServer(rdb, cfg, mux)
	if err != nil {
		if errors.Is(err, worker.ErrInvalid) || errors.Is(err, queue.ErrInvalid) {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down: running tasks may finish", "within", cfg.ShutdownTimeout)
	return srv.Shutdown(context.Background())
}

// settings merges the config file, if any, with the flags set on the
// command line, which win. It returns the file's Redis URL apart: the
// environment's wins over it.
func (f *workerFlags) settings(set map[string]bool) (worker.Config, map[string]handlerSpec, string, error) {
	file := &workerFile{}
	if f.config != "" {
		var err error
		if file, err = readWorkerFile(f.config); err != nil {
			return worker.Config{}, nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	cfg := worker.Config{
		Config:          queue.Config{Prefix: pick(set["prefix"], f.prefix, file.Prefix)},
		Queues:          file.Queues,
		StrictPriority:  f.strict || file.StrictPriority,
		Concurrency:     pick(set["concurrency"], f.concurrency, file.Concurrency),
		ShutdownTimeout: pick(set["shutdown-timeout"], f.shutdownTimeout, time.Duration(file.ShutdownTimeout)),
	}
	if set["queues"] || len(cfg.Queues) == 0 {
		q, err := parseQueues(f.queues)
		if err != nil {
			return cfg, nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		cfg.Queues = q
	}
	cfg.Queues, cfg.QueuePatterns = splitPatterns(cfg.Queues)
	if _, err := config.Normalize(cfg.Config); err != nil {
		return cfg, nil, "", fmt.Errorf("%w: --prefix: %v", errUsage, err)
	}
	if cfg.Concurrency < 1 {
		return cfg, nil, "", usageErr("--concurrency %d: want at least 1", cfg.Concurrency)
	}
	if cfg.ShutdownTimeout <= 0 {
		return cfg, nil, "", usageErr("--shutdown-timeout %v: want more than 0", cfg.ShutdownTimeout)
	}
	specs := map[string]handlerSpec{}
	for typ, h := range file.Handlers {
		specs[typ] = h
	}
	for _, s := range f.handlers {
		typ, h, err := parseHandlerFlag(s)
		if err != nil {
			return cfg, nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		specs[typ] = h
	}
	if len(specs) == 0 {
		return cfg, nil, "", usageErr("no handlers: pass --handler 'TYPE=exec:COMMAND' or 'TYPE=http:URL', or --config FILE")
	}
	return cfg, specs, file.Redis, nil
}

// pick returns flag when it was set on the command line, else file's
// value when it is not zero, else flag (its default).
func pick[T comparable](set bool, flag, file T) T {
	var zero T
	if set || file == zero {
		return flag
	}
	return file
}

// mux builds the handler of every task type.
func (f *workerFlags) mux(m *Main, specs map[string]handlerSpec, log *slog.Logger) (*worker.Mux, error) {
	var stdout io.Writer = &lockedWriter{w: m.Stdout}
	if file, ok := m.Stdout.(*os.File); ok {
		stdout = file // commands write to it directly
	}
	defaults := handlerDefaults{json: f.json, timeout: f.timeout, retryExitCode: f.retryExitCode, retryIn: f.retryIn}
	client := &http.Client{}
	mux := worker.NewMux()
	types := make([]string, 0, len(specs))
	for typ := range specs {
		types = append(types, typ)
	}
	slices.Sort(types)
	for _, typ := range types {
		r, err := specs[typ].resolve(typ, defaults)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		mux.Handle(typ, &builtin{resolved: r, log: log, stdout: stdout, client: client})
		if r.url != "" {
			log.Info("handler", "type", typ, "http", redact.URL(r.url), "json", r.json)
		} else {
			log.Info("handler", "type", typ, "exec", r.argv, "json", r.json)
			// Not an error: the command may be installed after the worker
			// starts, and its tasks retry meanwhile. But a typo should show
			// now, not at the first task.
			if _, err := exec.LookPath(r.argv[0]); err != nil {
				log.Warn("handler command not found: its tasks will fail and retry until it is installed",
					"type", typ, "command", r.argv[0], "err", err)
			}
		}
	}
	return mux, nil
}
