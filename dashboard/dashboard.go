package dashboard

import (
	"cmp"
	"crypto/rand"
	"embed"
	"fmt"
	"github.com/shardq/shardq/internal/inspect"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

//go:embed templates/*.html assets/*
var files embed.FS

// Options configures the dashboard. New refuses Options that say nothing
// about authentication: set BasicAuth, BearerToken, or both; or set
// Unauthenticated for a dashboard behind your own authentication or on a
// loopback address. Consider ReadOnly for viewers.
type Options struct {
	// BasePath is the path the dashboard is mounted under ("/admin/queues"),
	// used to build links. Defaults to what http.StripPrefix removed from
	// the request path, so mounting with StripPrefix needs nothing here.
	BasePath string
	// Title names the dashboard in page titles. Defaults to "shardq".
	Title string
	// ReadOnly hides every action and rejects them with 403.
	ReadOnly bool
	// BasicAuth requires HTTP basic authentication with its user and
	// password. New refuses one whose User or Password is empty or blank.
	BasicAuth *BasicAuth
	// BearerToken accepts "Authorization: Bearer <token>". With BasicAuth
	// also set, either is enough. Without BasicAuth and Unauthenticated,
	// New refuses an empty or blank token: an unset environment variable
	// does not open the dashboard.
	BearerToken string
	// Unauthenticated serves every page and action to anyone who can
	// reach the dashboard, without credentials. Set it only for a
	// dashboard behind your own authentication or on a loopback address.
	// New refuses it with BasicAuth or BearerToken set. An unauthenticated
	// dashboard answers only requests whose Host is a loopback name or
	// address, or one of AllowedHosts, so a page of another site cannot
	// reach it through DNS rebinding.
	Unauthenticated bool
	// AllowedHosts are the host names and addresses, besides localhost,
	// 127.0.0.0/8 and ::1, that requests may name in their Host header.
	// Ports are ignored and case does not matter. "*" allows every host.
	// An unauthenticated dashboard refuses every other Host with 421; an
	// authenticated one checks the Host only when AllowedHosts is set.
	AllowedHosts []string
	// CSRFKey signs the tokens that every action must carry. Defaults to
	// a random key per process; set the same key on every replica behind
	// one load balancer.
	CSRFKey []byte
	// PageSize is how many tasks a page lists, and how many queues the
	// overview lists per page. Defaults to 50.
	PageSize int
	// RefreshInterval is how often the overview and queue pages refresh
	// their counts, chart and alarms (pausable on the page). Defaults to 5s.
	RefreshInterval time.Duration
	// TailInterval is how often the live tail of recent tasks polls.
	// Defaults to 2s.
	TailInterval time.Duration
	// Logger receives errors from Redis. Defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is served at /metrics (a Prometheus handler, say
	// promhttp.HandlerFor over metrics.NewQueueCollector), behind the
	// dashboard's authentication unless MetricsPublic is set.
	Metrics       http.Handler
	MetricsPublic bool
}

// BasicAuth is a user and password for HTTP basic authentication.
type BasicAuth struct {
	User     string
	Password string
}

// server is the dashboard: the http.Handler New returns.
type server struct {
	insp  *queue.Inspector
	opts  Options
	mux   *http.ServeMux
	pages map[string]*templateSet
	csrf  []byte
	cop   *http.CrossOriginProtection
	log   *slog.Logger
	creds credentials
	hosts hostSet
}

// New returns the dashboard over insp, an http.Handler: HTML pages, a
// JSON API under /api, and the assets they use, all embedded. Mount it at the root or
// under a prefix with http.StripPrefix:
//
//	d, err := dashboard.New(insp, opts)
//	if err != nil {
//		return err
//	}
//	mux.Handle("/queues/", http.StripPrefix("/queues", d))
//
// New returns an error wrapping ErrInvalid when opts name no
// credentials, an empty one, or settings that contradict each other. The
// error names the field, never the secret.
func New(insp *queue.Inspector, opts Options) (http.Handler, error) {
	if insp == nil {
		return nil, fmt.Errorf("%w: nil Inspector", ErrInvalid)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	hosts, err := newHostSet(opts)
	if err != nil {
		return nil, err
	}
	opts.Title = cmp.Or(opts.Title, "shardq")
	opts.PageSize = cmp.Or(opts.PageSize, 50)
	opts.PageSize = min(max(opts.PageSize, 1), inspect.MaxPageSize)
	opts.TailInterval = cmp.Or(opts.TailInterval, 2*time.Second)
	opts.RefreshInterval = cmp.Or(opts.RefreshInterval, 5*time.Second)
	opts.BasePath = strings.TrimSuffix(opts.BasePath, "/")
	d := &server{insp: insp, opts: opts, mux: http.NewServeMux(), csrf: opts.CSRFKey,
		cop: http.NewCrossOriginProtection(), log: cmp.Or(opts.Logger, slog.Default()), creds: newCredentials(opts), hosts: hosts}
	// the secrets live on as digests in creds only
	d.opts.BasicAuth, d.opts.BearerToken = nil, ""
	if len(d.csrf) == 0 {
		d.csrf = make([]byte, 32)
		_, _ = rand.Read(d.csrf)
	}
	d.pages = mustParsePages()
	d.routes()
	return d, nil
}

func (d *server) routes() {
	assets, _ := fs.Sub(files, "assets")
	d.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(filesOnly{assets})))

	d.mux.HandleFunc("GET /{$}", d.overviewPage)
	d.mux.HandleFunc("GET /queues/{queue}", d.queuePage)
	d.mux.HandleFunc("GET /queues/{queue}/tasks/{id}", d.taskPage)
	d.mux.HandleFunc("GET /queues/{queue}/groups", d.groupsPage)
	d.mux.HandleFunc("GET /workers", d.workersPage)
	d.mux.HandleFunc("GET /schedules", d.schedulesPage)
	d.mux.HandleFunc("GET /limits", d.limitsPage)
	d.mux.HandleFunc("GET /find", d.findPage)
	d.mux.HandleFunc("GET /search", d.searchPage)
	d.mux.HandleFunc("GET /workflows", d.flowsPage)
	d.mux.HandleFunc("GET /batches/{id}", d.batchPage)
	d.mux.HandleFunc("GET /workflows/{id}", d.workflowPage)
	d.mux.HandleFunc("GET /workflows/{id}/node", d.nodePage)
	d.mux.HandleFunc("GET /api/workflows", d.apiFlows)
	d.mux.HandleFunc("GET /api/batches/{id}", d.apiBatch)
	d.mux.HandleFunc("GET /api/workflows/{id}", d.apiWorkflow)
	d.mux.HandleFunc("GET /api/workflows/{id}/node", d.apiNode)
	d.mux.HandleFunc("GET /api/queues/{queue}/search", d.apiSearch)

	d.mux.HandleFunc("GET /api/queues", d.apiQueues)
	d.mux.HandleFunc("GET /api/queues/{queue}", d.apiQueue)
	d.mux.HandleFunc("GET /api/queues/{queue}/history", d.apiHistory)
	d.mux.HandleFunc("GET /api/queues/{queue}/scaling", d.apiScaling)
	d.mux.HandleFunc("GET /api/history", d.apiHistory)
	d.mux.HandleFunc("GET /api/queues/{queue}/tasks", d.apiTasks)
	d.mux.HandleFunc("GET /api/queues/{queue}/tasks/{id}", d.apiTask)
	d.mux.HandleFunc("GET /api/queues/{queue}/groups", d.apiGroups)
	d.mux.HandleFunc("GET /api/queues/{queue}/groups/{group}", d.apiGroup)
	d.mux.HandleFunc("GET /api/workers", d.apiWorkers)
	d.mux.HandleFunc("GET /api/schedules", d.apiSchedules)
	d.mux.HandleFunc("GET /api/limits", d.apiLimits)
	d.mux.HandleFunc("GET /api/csrf", d.apiCSRF)
	if d.opts.Metrics != nil {
		d.mux.Handle("GET /metrics", d.opts.Metrics)
	}

	for _, a := range actions {
		d.mux.Handle("POST "+a.pattern, d.actionHandler(a, false))
		d.mux.Handle("POST /api"+a.pattern, d.actionHandler(a, true))
	}
	d.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP serves a page, an API call, an action or an asset, after
// authentication and, for actions, the CSRF checks.
func (d *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !d.hosts.allows(r.Host) {
		d.misdirected(w, r)
		return
	}
	if d.opts.Metrics != nil && d.opts.MetricsPublic && strings.TrimPrefix(r.URL.Path, d.opts.BasePath) == "/metrics" {
		d.opts.Metrics.ServeHTTP(w, r) // a scraper without credentials, as configured
		return
	}
	user, bearer, ok := d.authenticate(r)
	if !ok {
		d.challenge(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := d.checkAction(r, user, bearer); err != nil {
			d.fail(w, r, err)
			return
		}
	}
	d.mux.ServeHTTP(w, withUser(r, user))
}

// filesOnly serves the files of an fs.FS and none of its directories, so
// http.FileServer lists no directory: it answers 404 instead.
type filesOnly struct{ fs.FS }

// Open opens a file, and reports a directory as not there.
func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		_ = file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// base returns the path the dashboard is mounted under, without a
// trailing slash: Options.BasePath, or what http.StripPrefix removed.
func (d *server) base(r *http.Request) string {
	if d.opts.BasePath != "" {
		return d.opts.BasePath
	}
	full := r.RequestURI
	if i := strings.IndexAny(full, "?#"); i >= 0 {
		full = full[:i]
	}
	if strings.HasPrefix(full, "http://") || strings.HasPrefix(full, "https://") || !strings.HasPrefix(full, "/") {
		return ""
	}
	if b, ok := strings.CutSuffix(full, r.URL.EscapedPath()); ok && !strings.Contains(b, "//") {
		return strings.TrimSuffix(b, "/")
	}
	return ""
}
