package rcall

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
	cmd := call(ctx, c, "evalsha", s.hash, keys, args)
	if IsNoScript(cmd.Err()) {
		return call(ctx, c, "eval", s.src, keys, args)
	}
	return cmd
}

// EvalSha sends EVALSHA of s on c (a pipeline, say) and nothing else: a
// NOSCRIPT reply is the caller's to handle.
func (s *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return call(ctx, c, "evalsha", s.hash, keys, args)
}

// Processor runs one command: every go-redis client.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Prepared is a script call's fixed part (the command, the keys and the
// leading arguments) with every value already boxed, for a hot caller that
// runs the same call again and again with a few arguments more: go-redis
// would otherwise box each key and argument anew at every call.
type Prepared struct {
	script *Script
	args   []any // "evalsha", hash, number of keys, keys..., leading args...
}

// Prepare returns s's call with keys and the leading args fixed.
func (s *Script) Prepare(keys []string, args ...any) *Prepared {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", s.hash, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return &Prepared{script: s, args: append(a, args...)}
}

// PrepareKeys returns s's call with keys fixed and later more keys to
// come: the first later arguments of each Run are those keys (a key that
// changes from call to call), the script's arguments follow them.
func (s *Script) PrepareKeys(keys []string, later int) *Prepared {
	p := s.Prepare(keys)
	p.args[2] = len(keys) + later
	return p
}

// Run runs the prepared call with more arguments after the fixed ones,
// loading the script (EVAL) when Redis does not have it, as Script.Run does.
func (p *Prepared) Run(ctx context.Context, c Processor, more ...any) *redis.Cmd {
	args := p.Args(len(more))
	copy(args[len(p.args):], more)
	return p.RunArgs(ctx, c, args)
}

// Args returns a new slice of the call's arguments: the fixed ones, then
// more slots left nil for the caller to fill. A hot caller keeps it and
// fills the slots anew for each RunArgs, so that no call copies the fixed
// part or boxes a value that does not change (a pointer, stored once,
// boxes nothing).
func (p *Prepared) Args(more int) []any {
	args := make([]any, len(p.args)+more)
	copy(args, p.args)
	return args
}

// RunArgs runs the call with args, a slice from Args with its slots
// filled, as Run does. RunArgs never changes args: a NOSCRIPT reply is
// followed by an EVAL of a copy. The caller may reuse args once RunArgs
// returned, unless a hook of c keeps the command.
func (p *Prepared) RunArgs(ctx context.Context, c Processor, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = c.Process(ctx, noRetry{cmd})
	if IsNoScript(cmd.Err()) {
		eval := append([]any{"eval", p.script.src}, args[2:]...)
		cmd = redis.NewCmd(ctx, eval...)
		_ = c.Process(ctx, noRetry{cmd})
	}
	return cmd
}

// noRetry is a script call go-redis must never send again by itself. A
// ClusterClient, whatever MaxRetries says, resends a command, or a whole
// pipeline, after a timeout or a broken connection, when the first may
// have run: a pop run twice hides the first one's tasks until their
// leases expire, an enqueue run twice runs a task twice. go-redis asks
// each command NoRetry before it resends; MOVED and ASK it still follows,
// since the node that answered them ran nothing.
type noRetry struct{ *redis.Cmd }

// NoRetry tells go-redis not to resend the call.
func (noRetry) NoRetry() bool { return true }

// call sends EVAL or EVALSHA (name) of script on c, marked noRetry.
func call(ctx context.Context, c redis.Scripter, name, script string, keys []string, args []any) *redis.Cmd {
	p, ok := c.(Processor)
	if !ok {
		if name == "eval" {
			return c.Eval(ctx, script, keys, args...)
		}
		return c.EvalSha(ctx, script, keys, args...)
	}
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	_ = p.Process(ctx, noRetry{cmd})
	return cmd
}
