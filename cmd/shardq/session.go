package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/queue"
)

// inspectFlags are the flags of every command that reads or changes
// queues through a queue.Inspector: get, describe and the actions.
type inspectFlags struct {
	redisURL string
	prefix   string
	out      outputFlag
	store    storeFlags
}

// add registers --redis, --prefix, --output and --key-file with
// --allow-plaintext (to read encrypted payloads and errors).
func (f *inspectFlags) add(fs *flags) {
	fs.StringVar(&f.redisURL, "redis", "", redisFlagHelp)
	fs.StringVar(&f.prefix, "prefix", config.DefaultPrefix, prefixFlagHelp)
	f.out.add(fs)
	f.store.add(fs, false, true)
}

// check checks the flags that need no Redis.
func (f *inspectFlags) check() error {
	if err := config.CheckName(f.prefix); err != nil {
		return fmt.Errorf("%w: --prefix %q: %v", errUsage, f.prefix, err)
	}
	return f.out.check()
}

// session is one command's connection to Redis and its Inspector.
type session struct {
	rdb    redis.UniversalClient
	insp   *queue.Inspector
	prefix string
	close  func()
}

// open connects to Redis and builds the Inspector of f's prefix.
func (m *Main) open(ctx context.Context, f *inspectFlags) (*session, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	rdb, closeRedis, err := m.connect(ctx, f.redisURL, false, m.Stderr)
	if err != nil {
		return nil, err
	}
	cfg := queue.Config{Prefix: f.prefix}
	if err := f.store.apply(m, &cfg); err != nil {
		closeRedis()
		return nil, err
	}
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		closeRedis()
		return nil, err
	}
	return &session{rdb: rdb, insp: insp, prefix: f.prefix, close: closeRedis}, nil
}

// nothing is the error of a read that found nothing: the prefix's when
// it has no queues (so a mistyped --prefix is not taken for an idle
// system), else nil.
func (s *session) nothing(ctx context.Context) error {
	return noQueues(ctx, s.rdb, s.insp, s.prefix)
}

// explain turns a not-found error into one that says why: the prefix has
// no queues, or the queue is not among them (naming those it has). A
// call the Inspector refused as invalid is a usage error: the flags asked
// for it (--order newest of pending tasks).
func (s *session) explain(ctx context.Context, err error, q string) error {
	if errors.Is(err, queue.ErrInvalid) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if !errors.Is(err, queue.ErrNotFound) {
		return err
	}
	if e := s.nothing(ctx); e != nil {
		return e
	}
	if q == "" {
		return err
	}
	names, lerr := s.insp.Queues(ctx)
	if lerr != nil || slices.Contains(names, q) {
		return err // the queue is there: what was not found is in it
	}
	const most = 20
	list := strings.Join(names[:min(len(names), most)], ", ")
	if len(names) > most {
		list += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return fmt.Errorf("no queue %q under prefix %q; its queues are: %s", q, s.prefix, list)
}

// needQueue refuses an empty or invalid --queue.
func needQueue(q string) error {
	if q == "" {
		return usageErr("--queue is required")
	}
	if err := checkQueueName(q); err != nil {
		return fmt.Errorf("%w: --queue: %v", errUsage, err)
	}
	return nil
}
