package redisproc

import (
	"path/filepath"
	"strconv"
)

// Option configures a server started by [Start] or the nodes started by
// [StartCluster].
type Option func(*config)

type config struct {
	aof       bool
	maxMemory int64
	dir       string
	cluster   bool
	extra     []string
	// sentinelConf, when set, starts a Sentinel instead of a data node,
	// with this text as its config file (sentinelFile in Dir, written once:
	// Sentinel rewrites it as it learns).
	sentinelConf string
}

// WithAOF turns persistence on: appendonly yes with appendfsync always, so
// every acknowledged write survives [Server.Kill] followed by
// [Server.Restart]. By default persistence is off (no AOF, no RDB
// snapshots).
func WithAOF() Option {
	return func(c *config) { c.aof = true }
}

// WithMaxMemory sets maxmemory to bytes with maxmemory-policy noeviction, so
// writes beyond the limit fail with an OOM error. Zero or less means no
// limit.
func WithMaxMemory(bytes int64) Option {
	return func(c *config) { c.maxMemory = bytes }
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory-policy", "allkeys-lru"). They come last, so they
// override the defaults and the other options.
func WithArgs(args ...string) Option {
	return func(c *config) { c.extra = append(c.extra, args...) }
}

// WithDir makes the server use dir as its working directory (data, AOF,
// logs) instead of a fresh temporary directory. dir is created if missing,
// made absolute, and left in place by [Server.Close]. For [StartCluster],
// node i uses the subdirectory "node<i>" of dir. An empty dir means the
// default: a temporary directory that Close removes.
func WithDir(dir string) Option {
	return func(c *config) { c.dir = dir }
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	return c
}

// args returns the redis-server command line for a server in dir (an
// absolute path).
func (c *config) args(dir string, port, busPort int) []string {
	var a []string
	if c.sentinelConf != "" {
		// the file comes first; Sentinel rewrites it as it learns
		a = append(a, filepath.Join(dir, sentinelFile), "--sentinel")
	}
	a = append(a,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", dir,
		"--logfile", filepath.Join(dir, logName),
	)
	if c.sentinelConf != "" {
		return append(a, c.extra...)
	}
	a = append(a, "--save", "")
	if c.aof {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if c.maxMemory > 0 {
		a = append(a,
			"--maxmemory", strconv.FormatInt(c.maxMemory, 10),
			"--maxmemory-policy", "noeviction")
	}
	if c.cluster {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(busPort),
			// A node learns its own IP from a peer's MEET; a lone
			// master never meets one and would report an empty IP
			// in CLUSTER SLOTS. It is bound to loopback anyway.
			"--cluster-announce-ip", "127.0.0.1")
	}
	return append(a, c.extra...)
}
