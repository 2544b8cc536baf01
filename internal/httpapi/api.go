package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/shardq/shardq/queue"
)

// ErrInvalid reports Options New cannot serve with: an empty token, a
// bound out of range.
var ErrInvalid = errors.New("httpapi: invalid")

// Options configures the API.
type Options struct {
	// Token is the bearer token every request must carry. Required: an
	// empty or blank token is ErrInvalid, never "no authentication".
	Token string
	// MaxBodyBytes bounds a request body. Defaults to 8 MiB.
	MaxBodyBytes int64
	// MaxBatch bounds the tasks of one batch request. Defaults to 1,000.
	MaxBatch int
	// MaxInFlight bounds the requests served at once; one more is
	// answered 503 with Retry-After. Defaults to 256.
	MaxInFlight int
	// Logger logs refused requests. Defaults to slog.Default().
	Logger *slog.Logger
}

//go:embed openapi.json
var openAPI []byte

// api serves the routes.
type api struct {
	client *queue.Client
	insp   *queue.Inspector
	opts   Options
	token  [sha256.Size]byte // the token's digest: the token itself is not kept
	mux    *http.ServeMux
	slots  chan struct{} // one per request served now
}

// New returns the API over client (enqueues) and insp (reads).
func New(client *queue.Client, insp *queue.Inspector, opts Options) (http.Handler, error) {
	if client == nil || insp == nil {
		return nil, fmt.Errorf("%w: nil client or inspector", ErrInvalid)
	}
	if strings.TrimSpace(opts.Token) == "" {
		return nil, fmt.Errorf("%w: empty token: the API serves no request without one", ErrInvalid)
	}
	switch {
	case opts.MaxBodyBytes < 0:
		return nil, fmt.Errorf("%w: MaxBodyBytes %d, want >= 0", ErrInvalid, opts.MaxBodyBytes)
	case opts.MaxBatch < 0 || opts.MaxBatch > 10_000:
		return nil, fmt.Errorf("%w: MaxBatch %d, want 0 to 10000", ErrInvalid, opts.MaxBatch)
	case opts.MaxInFlight < 0:
		return nil, fmt.Errorf("%w: MaxInFlight %d, want >= 0", ErrInvalid, opts.MaxInFlight)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 1000
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &api{client: client, insp: insp, opts: opts, token: sha256.Sum256([]byte(opts.Token)), mux: http.NewServeMux(),
		slots: make(chan struct{}, opts.MaxInFlight)}
	a.opts.Token = ""
	for _, r := range routes {
		a.mux.HandleFunc(r.method+" "+r.path, r.handle(a))
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path+" (see /v1/openapi.json)")
	})
	return a, nil
}

// route is one operation of openapi.json.
type route struct {
	method, path string
	handle       func(*api) http.HandlerFunc
}

// routes are the API's operations; TestOpenAPIRoutes holds them and
// openapi.json to each other.
var routes = []route{
	{"POST", "/v1/queues/{queue}/tasks", func(a *api) http.HandlerFunc { return a.enqueue }},
	{"POST", "/v1/queues/{queue}/tasks/batch", func(a *api) http.HandlerFunc { return a.enqueueBatch }},
	{"GET", "/v1/queues/{queue}/tasks/{id}", func(a *api) http.HandlerFunc { return a.getTask }},
	{"GET", "/v1/openapi.json", func(a *api) http.HandlerFunc { return a.spec }},
}

// ServeHTTP checks the token, bounds the body and routes the request.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shardq"`)
		writeError(w, http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer <token>)")
		return
	}
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d requests in flight already: try again", a.opts.MaxInFlight))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes)
	a.mux.ServeHTTP(w, r)
}

// spec serves openapi.json.
func (a *api) spec(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
