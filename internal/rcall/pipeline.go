package rcall

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Pipe is a go-redis pipeline that remembers the script calls queued on it,
// so that Pipelined can rerun those the server refused with NOSCRIPT.
type Pipe struct {
	redis.Pipeliner
	calls []scriptCall
}

type scriptCall struct {
	script *Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// Run queues an EVALSHA of s. Its result is in the returned Cmd after Pipelined returns.
func (p *Pipe) Run(ctx context.Context, s *Script, keys []string, args ...any) *redis.Cmd {
	cmd := call(ctx, p.Pipeliner, "evalsha", s.hash, keys, args)
	p.calls = append(p.calls, scriptCall{script: s, keys: keys, args: args, cmd: cmd})
	return cmd
}

// Pipelined queues what fn adds to a Pipe and sends it in one round trip.
// Script calls that failed with NOSCRIPT (the cache was flushed before or
// while the pipeline ran) are sent again with EVAL in a second round trip,
// and their Cmds carry the new results, so the caller sees no NOSCRIPT.
// Those calls run after the rest of the pipeline; a caller whose commands
// depend on their order within the pipeline must not use Pipelined.
// It returns the first error of any command other than redis.Nil.
func Pipelined(ctx context.Context, c redis.Cmdable, fn func(*Pipe) error) error {
	p := &Pipe{Pipeliner: c.Pipeline()}
	if err := fn(p); err != nil {
		p.Discard()
		return err
	}
	cmds, _ := p.Exec(ctx)
	p.rerunNoScript(ctx, c)
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

func (p *Pipe) rerunNoScript(ctx context.Context, c redis.Cmdable) {
	var again []scriptCall
	for _, call := range p.calls {
		if IsNoScript(call.cmd.Err()) {
			again = append(again, call)
		}
	}
	if len(again) == 0 {
		return
	}
	// Each fresh Cmd carries its own outcome (a reply error, or the
	// connection error go-redis sets on every Cmd of a failed pipeline), so
	// Exec's summary error adds nothing.
	retry := c.Pipeline()
	fresh := make([]*redis.Cmd, len(again))
	for i, sc := range again {
		fresh[i] = call(ctx, retry, "eval", sc.script.src, sc.keys, sc.args)
	}
	_, _ = retry.Exec(ctx)
	for i, call := range again {
		call.cmd.SetVal(fresh[i].Val())
		call.cmd.SetErr(fresh[i].Err())
	}
}
