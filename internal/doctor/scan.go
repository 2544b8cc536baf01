package doctor

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scanKeys walks every key under the prefix with SCAN (on every master of
// a cluster) and files the ones the checks read by partition.
func (a *audit) scanKeys(ctx context.Context) error {
	return a.scanMatch(ctx, []string{glob(a.opt.Prefix) + ":*", "{" + glob(a.opt.Prefix) + ":*"}, a.file)
}

// rescan files partition p's keys anew: the lists written since the first
// scan (a new shard, a group's list, a turn) are read at a second look.
func (a *audit) rescan(ctx context.Context, p *part) error {
	p.shards, p.lists, p.flight, p.unique, p.claims = nil, nil, nil, nil, nil
	count := a.keyCount
	err := a.scanMatch(ctx, []string{glob(p.k.T) + ":*"}, a.file)
	a.keyCount = count
	sort.Slice(p.shards, func(i, j int) bool { return p.shards[i] < p.shards[j] })
	return err
}

// glob escapes the characters SCAN's MATCH gives a meaning.
func glob(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// scanMatch calls file with every key that matches one of the patterns,
// on every master of a cluster.
func (a *audit) scanMatch(ctx context.Context, patterns []string, file func(string)) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		for _, match := range patterns {
			var cursor uint64
			for {
				ks, next, err := c.Scan(ctx, cursor, match, int64(a.opt.Page)).Result()
				if err != nil {
					return err
				}
				mu.Lock()
				for _, k := range ks {
					file(k)
				}
				mu.Unlock()
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		return nil
	}
	switch c := a.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	default:
		// a Ring or another UniversalClient: SCAN through it
		var cursor uint64
		for _, match := range patterns {
			for {
				ks, next, err := a.rdb.Scan(ctx, cursor, match, int64(a.opt.Page)).Result()
				if err != nil {
					return err
				}
				for _, k := range ks {
					file(k)
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		return nil
	}
}

// file records key k where the checks will look for it.
func (a *audit) file(k string) {
	a.keyCount++
	prefix := a.opt.Prefix
	if rest, ok := strings.CutPrefix(k, prefix+":"); ok {
		switch {
		case strings.HasPrefix(rest, "dict:"):
			a.dicts = append(a.dicts, k)
		case strings.HasPrefix(rest, "sem:"):
			a.sems = append(a.sems, k)
		}
		return
	}
	inner, ok := strings.CutPrefix(k, "{"+prefix+":")
	if !ok {
		return
	}
	end := strings.IndexByte(inner, '}')
	if end < 0 {
		return
	}
	inner, rest := inner[:end], inner[end+1:]
	if n, ok := strings.CutPrefix(inner, "flows:"); ok && isNumber(n) {
		if id, ok := strings.CutPrefix(rest, ":w:"); ok && !strings.HasSuffix(id, ":new") {
			a.flows = append(a.flows, k)
		}
		return
	}
	if q, ok := strings.CutSuffix(inner, ":quota"); ok {
		if _, known := a.registry[q]; !known {
			a.foreign[q] = append(a.foreign[q], k)
		}
		if rest == ":lock" {
			a.quotas = append(a.quotas, k)
		}
		return
	}
	i := strings.LastIndexByte(inner, ':')
	if i < 0 || !isNumber(inner[i+1:]) {
		return
	}
	q := inner[:i]
	n, _ := strconv.Atoi(inner[i+1:])
	if _, known := a.registry[q]; !known {
		a.foreign[q] = append(a.foreign[q], k)
		return
	}
	p := a.partition(q, n)
	switch {
	case strings.HasPrefix(rest, ":s:"):
		if s, err := strconv.ParseInt(rest[3:], 10, 64); err == nil {
			p.shards = append(p.shards, s)
		}
	case strings.HasPrefix(rest, ":fq:"), strings.HasPrefix(rest, ":fo:"), strings.HasPrefix(rest, ":k:"):
		p.lists = append(p.lists, k)
	case strings.HasPrefix(rest, ":inflight:"):
		p.flight = append(p.flight, rest[len(":inflight:"):])
	case strings.HasPrefix(rest, ":unique:"):
		p.unique = append(p.unique, k)
	case strings.HasPrefix(rest, ":ids:"):
		p.claims = append(p.claims, k)
	}
}

// isNumber reports whether s is a decimal number.
func isNumber(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// zscan reads a sorted set in pages.
func (a *audit) zscan(ctx context.Context, key string, fn func([]redis.Z) error) error {
	var cursor uint64
	for {
		kv, next, err := a.rdb.ZScan(ctx, key, cursor, "", int64(a.opt.Page)).Result()
		if err != nil {
			return err
		}
		zs := make([]redis.Z, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			s, _ := strconv.ParseFloat(kv[i+1], 64)
			zs = append(zs, redis.Z{Member: kv[i], Score: s})
		}
		if err := fn(zs); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// hscan reads a hash in pages of field -> value.
func (a *audit) hscan(ctx context.Context, key string, fn func(fields, values []string) error) error {
	var cursor uint64
	for {
		kv, next, err := a.rdb.HScan(ctx, key, cursor, "", int64(a.opt.Page)).Result()
		if err != nil {
			return err
		}
		fs, vs := make([]string, 0, len(kv)/2), make([]string, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			fs, vs = append(fs, kv[i]), append(vs, kv[i+1])
		}
		if err := fn(fs, vs); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// pipe runs fn's commands in pipelines of at most opt.Pipeline commands:
// fn queues its commands on the pipeliner it is given, then flush sends
// whatever is queued. A redis.Nil reply is no error.
type pipe struct {
	a   *audit
	ctx context.Context
	p   redis.Pipeliner
	n   int
	cbs []func()
}

func (a *audit) pipe(ctx context.Context) *pipe {
	return &pipe{a: a, ctx: ctx, p: a.rdb.Pipeline()}
}

// add queues one command through fn and, once it ran, calls done.
func (p *pipe) add(fn func(redis.Pipeliner), done func()) error {
	fn(p.p)
	p.n++
	if done != nil {
		p.cbs = append(p.cbs, done)
	}
	if p.n >= p.a.opt.Pipeline {
		return p.flush()
	}
	return nil
}

// flush sends what is queued and runs the callbacks.
func (p *pipe) flush() error {
	if p.n == 0 {
		return nil
	}
	_, err := p.p.Exec(p.ctx)
	p.n = 0
	cbs := p.cbs
	p.cbs = nil
	if err != nil && err != redis.Nil {
		return err
	}
	for _, cb := range cbs {
		cb()
	}
	return nil
}
