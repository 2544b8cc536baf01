package redistest

import "github.com/shardq/shardq/internal/redisproc"

// Option configures a server started by [Start] or [StartCluster].
type Option redisproc.Option

// WithAOF turns persistence on: appendonly yes with appendfsync always, so
// every acknowledged write survives [Server.Kill] followed by
// [Server.Restart]. By default persistence is off.
func WithAOF() Option {
	return Option(redisproc.WithAOF())
}

// WithMaxMemory sets maxmemory to bytes with maxmemory-policy noeviction, so
// writes beyond the limit fail with an OOM error.
func WithMaxMemory(bytes int64) Option {
	return Option(redisproc.WithMaxMemory(bytes))
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory-policy", "allkeys-lru"). They come last, so they
// override the defaults and the other options.
func WithArgs(args ...string) Option {
	return Option(redisproc.WithArgs(args...))
}

// procOptions converts opts for redisproc, running the server(s) in dir.
func procOptions(dir string, opts []Option) []redisproc.Option {
	po := make([]redisproc.Option, 0, len(opts)+1)
	po = append(po, redisproc.WithDir(dir))
	for _, o := range opts {
		po = append(po, redisproc.Option(o))
	}
	return po
}
