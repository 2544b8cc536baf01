package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// Script is one resolved Lua script, run by its SHA1 with EVALSHA.
type Script struct {
	name string
	src  string
	hash string
}

// NewScript returns a Script for the resolved source src.
func NewScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, hash: hex.EncodeToString(sum[:])}
}

// Name returns the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Hash returns the SHA1 that EVALSHA uses.
func (s *Script) Hash() string { return s.hash }

// Source returns the resolved source, includes inlined.
func (s *Script) Source() string { return s.src }

// Load puts the script into the server's script cache (every master in a cluster).
func (s *Script) Load(ctx context.Context, c redis.Scripter) error {
	return c.ScriptLoad(ctx, s.src).Err()
}

// Run runs the script with EVALSHA and, when the server answers NOSCRIPT,
// once more with EVAL, which also caches it. NOSCRIPT means the script did
// not run, so the second call never runs it twice. Inside a pipeline use
// Pipe.Run, which recovers after Exec.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.hash, keys, args...)
	if IsNoScript(cmd.Err()) {
		return c.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}
